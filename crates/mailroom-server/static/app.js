// mailroom's web UI script. Keyboard navigation: j/k (or the arrow keys) move between the
// rows of a list, Enter or o opens the selected one, / focuses the search box, g then i goes
// to the unified inbox and g then p to the projects list. Forms that change state are sent as
// JSON with the CSRF token (the mailroom_csrf cookie repeated in the X-CSRF-Token header).
// Live pages reload their content when the server pushes a change.
(function () {
  "use strict";

  function csrfToken() {
    const found = document.cookie.split(";").map((c) => c.trim())
      .find((c) => c.startsWith("mailroom_csrf="));
    return found ? found.slice("mailroom_csrf=".length) : "";
  }

  async function postJson(url, body) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-csrf-token": csrfToken() },
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    let answer = {};
    try { answer = await response.json(); } catch (e) { answer = {}; }
    if (!response.ok) throw new Error(answer.error || `${response.status} ${response.statusText}`);
    return answer;
  }

  function wireComposer(form) {
    const status = document.getElementById("composer-status");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const body = {
        recipients: data.getAll("recipients"),
        subject: String(data.get("subject") || ""),
        body_md: String(data.get("body_md") || ""),
      };
      const thread = String(data.get("thread_id") || "").trim();
      if (thread) body.thread_id = thread;
      status.textContent = "Sending…";
      try {
        const sent = await postJson(form.action, body);
        status.textContent = `Sent to ${sent.recipients.join(", ")}.`;
        const project = form.action.replace(/\/overseer\/send$/, "");
        window.location.href = `${project}/message/${sent.message_id}`;
      } catch (error) {
        status.textContent = `Not sent: ${error.message}`;
      }
    });
  }

  function pickedIds() {
    return Array.from(document.querySelectorAll("input.pick:checked")).map((box) => Number(box.value));
  }

  // A form sent as JSON: its data-body, or (data-selected) the ticked messages' ids; after a
  // data-confirm question; then to data-next, or the page again.
  function wireJsonPost(form) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      let body = JSON.parse(form.dataset.body || "{}");
      if (form.hasAttribute("data-selected")) {
        const ids = pickedIds();
        if (ids.length === 0) { window.alert("Tick the messages first."); return; }
        body = { message_ids: ids };
      }
      if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
      try {
        await postJson(form.action, body);
        if (form.dataset.next) { window.location.href = form.dataset.next; } else { window.location.reload(); }
      } catch (error) {
        window.alert(`Failed: ${error.message}`);
      }
    });
  }

  // Live pages: the server pushes a `change` event when data changes; the page fetches its
  // own URL again and swaps its content in place (not while the reader is typing).
  function liveUpdates() {
    if (!document.body.hasAttribute("data-live") || !window.EventSource) return;
    // The archive's pages also hear of Git commits.
    const archive = document.body.getAttribute("data-live") === "archive";
    const source = new EventSource(archive ? "/mail/api/events?archive=1" : "/mail/api/events");
    let busy = false;
    let pending = false;
    async function refresh() {
      const typing = document.activeElement &&
        ["INPUT", "TEXTAREA"].includes(document.activeElement.tagName);
      if (busy || typing) { pending = true; return; }
      busy = true;
      pending = false;
      try {
        const response = await fetch(window.location.href, { credentials: "same-origin" });
        if (!response.ok) return;
        const page = new DOMParser().parseFromString(await response.text(), "text/html");
        const fresh = page.querySelector("main");
        const main = document.querySelector("main");
        if (fresh && main && fresh.innerHTML !== main.innerHTML) {
          // Ticked messages stay ticked across the swap.
          const ticked = new Set(pickedIds().map(String));
          fresh.querySelectorAll("input.pick").forEach((box) => { box.checked = ticked.has(box.value); });
          main.replaceWith(document.adoptNode(fresh));
          selected = -1;
          document.querySelectorAll("form[data-json-post]").forEach(wireJsonPost);
        }
      } finally {
        busy = false;
        // A change that came while this one was fetched, or while the reader typed.
        if (pending) setTimeout(refresh, 0);
      }
    }
    source.addEventListener("change", refresh);
    document.addEventListener("focusout", () => { if (pending) setTimeout(refresh, 0); });
    // A hidden tab gives its connection back (browsers allow few per host).
    document.addEventListener("visibilitychange", () => {
      if (document.hidden) { source.close(); } else if (source.readyState === EventSource.CLOSED) {
        window.location.reload();
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    liveUpdates();
    const composer = document.getElementById("composer");
    if (composer) wireComposer(composer);
    document.querySelectorAll("form[data-json-post]").forEach(wireJsonPost);
  });
  let selected = -1;
  let pendingG = false;

  function rows() {
    return Array.from(document.querySelectorAll("ul.rows > li"));
  }

  function select(index) {
    const all = rows();
    if (all.length === 0) return;
    selected = Math.max(0, Math.min(index, all.length - 1));
    all.forEach((row, i) => row.classList.toggle("selected", i === selected));
    const link = all[selected].querySelector("a.row");
    if (link) link.focus({ preventScroll: false });
  }

  function typing(target) {
    return target && (target.isContentEditable ||
      ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (pendingG) {
      pendingG = false;
      if (event.key === "i") { window.location.href = "/mail"; return; }
      if (event.key === "p") { window.location.href = "/mail/projects"; return; }
    }
    switch (event.key) {
      case "j": case "ArrowDown": select(selected + 1); event.preventDefault(); break;
      case "k": case "ArrowUp": select(selected - 1); event.preventDefault(); break;
      case "o": case "Enter": {
        const row = rows()[selected];
        const link = row && row.querySelector("a.row");
        if (link) { window.location.href = link.href; event.preventDefault(); }
        break;
      }
      case "/": {
        const search = document.querySelector("input[type=search]");
        if (search) { search.focus(); event.preventDefault(); }
        break;
      }
      case "g": pendingG = true; break;
      default: break;
    }
  });
})();
