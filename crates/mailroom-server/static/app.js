// mailroom's web UI: keyboard navigation. j/k (or the arrow keys) move between the rows of a
// list, Enter or o opens the selected one, / focuses the search box, g then i goes to the
// unified inbox and g then p to the projects list.
(function () {
  "use strict";
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
