"""The web UI driven as a person would, in Debian's Chromium through Selenium.

Usage: ui_test.py BASE_URL SCREENSHOT_DIR

Seeds two projects over the REST routes, then opens the unified inbox, follows a message to
its thread, searches a project, retires an agent, opens an agent's inbox, writes as the Human
Overseer, watches mail arrive live, marks read, deletes messages (from an inbox and from a
message's page), browses the archive (the deletion's commit, the files, the timeline, the
network, time travel), confirms a sibling-project suggestion, moves with the keyboard, and
looks at the inbox on a phone-sized screen and in dark mode. Every page is saved as a PNG in SCREENSHOT_DIR.
Any JavaScript dialog (a hostile subject that ran) fails the run, as does a console error
(a Content-Security-Policy violation is one).
"""

import json
import sys
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

BASE = sys.argv[1].rstrip("/")
SHOTS = Path(sys.argv[2])
SHOTS.mkdir(parents=True, exist_ok=True)
HOSTILE = "<img src=x onerror=alert(1)> Deploy plan <script>alert(2)</script>"


def post(path, body):
    request = urllib.request.Request(
        BASE + path, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def seed():
    post("/api/project/ensure", {"human_key": "/work/webshop"})
    for name, program in [("BlueLake", "claude-code"), ("GreenCastle", "codex-cli"), ("RedFox", "gemini-cli")]:
        post(
            "/api/agent/register",
            {"project_slug": "/work/webshop", "name": name, "program": program, "model": "frontier"},
        )
    messages = [
        ("BlueLake", ["GreenCastle"], "Checkout refactor: plan", "We split **checkout** into three steps.\n\n- cart\n- payment\n- receipt", "T-42"),
        ("GreenCastle", ["BlueLake"], "Re: Checkout refactor: plan", "Agreed. I reserved `src/payment/**` for the next hour.", "T-42"),
        ("RedFox", ["BlueLake", "GreenCastle"], "Flaky test in CI", "`test_receipt_totals` fails one run in ten; looking into it.", "T-7"),
        ("BlueLake", ["RedFox"], HOSTILE, "Body with <script>alert(3)</script> and [a link](javascript:alert(4)).", "T-7"),
    ]
    # A second part of the same product: the UI should suggest the two are siblings.
    post("/api/project/ensure", {"human_key": "/work/webshop-admin"})
    for name in ["BlueLake", "GreenCastle"]:
        post(
            "/api/agent/register",
            {"project_slug": "/work/webshop-admin", "name": name, "program": "claude-code", "model": "frontier"},
        )
    for sender, to, subject, body, thread in messages:
        post(
            "/api/message/send",
            {"project_slug": "/work/webshop", "sender_name": sender, "recipient_names": to,
             "subject": subject, "body_md": body, "thread_id": thread},
        )


def fetch_inbox_over_mcp(agent):
    """The agent's inbox as its MCP client sees it (a stateless JSON-RPC tools/call)."""
    call = {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "fetch_inbox", "arguments": {
            "project_key": "/work/webshop", "agent_name": agent, "include_bodies": True}},
    }
    request = urllib.request.Request(
        BASE + "/mcp", data=json.dumps(call).encode(),
        headers={"content-type": "application/json", "accept": "application/json, text/event-stream"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.load(response)
    return json.loads(answer["result"]["content"][0]["text"])


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def shot(driver, name):
    path = SHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    print(f"[browser] saved {path}")


def no_console_errors(driver, where):
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert not errors, f"{where}: console errors {errors}"



def settled(read):
    """`read()` of a live page, for a wait to retry: a live update may replace what it reads,
    and chromedriver sometimes says so ("does not belong to the document") instead of the
    stale-element error the waits ignore."""
    try:
        return read()
    except WebDriverException as e:
        if "does not belong to the document" in str(e):
            raise StaleElementReferenceException(str(e)) from e
        raise

def main():
    seed()
    driver = browser()
    # Live pages swap their content in place when the server pushes a change, so an element
    # found a moment ago may be gone: a wait looks again instead of failing.
    wait = WebDriverWait(driver, 10, ignored_exceptions=[StaleElementReferenceException])
    try:
        driver.get(BASE + "/mail")
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "ul.rows > li")))

        def subjects_shown(d):
            rows = d.find_elements(By.CSS_SELECTOR, "#messages > li")
            return [r.find_element(By.CSS_SELECTOR, ".subject").text for r in rows]
        # Read inside a wait: a live update may swap the rows while they are read.
        subjects = wait.until(subjects_shown)
        assert len(subjects) == 4, f"unified inbox shows {len(subjects)} messages"
        assert HOSTILE in subjects, f"the hostile subject is shown as text: {subjects}"
        shot(driver, "unified-inbox")
        no_console_errors(driver, "/mail")

        # Follow a message to its page, then to its thread.
        def open_plan(d):
            rows = d.find_elements(By.CSS_SELECTOR, "#messages > li")
            plan = next(r for r in rows if r.find_element(By.CSS_SELECTOR, ".subject").text == "Checkout refactor: plan")
            plan.find_element(By.CSS_SELECTOR, "a.row").click()
            return True
        wait.until(open_plan)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "article.message")))
        assert driver.find_element(By.CSS_SELECTOR, ".body strong").text == "checkout"
        assert "GreenCastle" in driver.find_element(By.CSS_SELECTOR, ".meta").text
        shot(driver, "message")
        driver.find_element(By.LINK_TEXT, "whole thread").click()
        wait.until(ec.url_contains("/thread/T-42"))
        cards = driver.find_elements(By.CSS_SELECTOR, "article.message")
        assert len(cards) == 2, f"thread T-42 has {len(cards)} messages"
        shot(driver, "thread")

        # The project page, and a search typed into its box.
        driver.find_element(By.LINK_TEXT, "work-webshop").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "aside.panel")))
        box = driver.find_element(By.CSS_SELECTOR, "input[type=search]")
        box.send_keys("payment", Keys.ENTER)
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h2"), "for “payment”"))
        found = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#messages .subject")]
        assert found and all("Checkout" in s for s in found), f"search found {found}"
        shot(driver, "project-search")

        # Retire an agent from the agents panel, then bring it back.
        def red_fox_item():
            panel = driver.find_element(By.CSS_SELECTOR, "aside.panel")
            item = settled(lambda: next(
                (li for li in panel.find_elements(By.TAG_NAME, "li") if "RedFox" in li.text), None))
            if item is None:
                # Between a live update's removal of the old rows and its new ones: look again.
                raise StaleElementReferenceException("RedFox's row is being replaced")
            return item
        # Clicked inside a wait: a live update may replace the row between finding and clicking.
        wait.until(lambda d: red_fox_item().find_element(By.XPATH, ".//button[text()='Retire']").click() or True)
        wait.until(lambda d: "(retired)" in red_fox_item().text)
        shot(driver, "agent-retired")
        wait.until(lambda d: red_fox_item().find_element(By.XPATH, ".//button[text()='Unretire']").click() or True)
        wait.until(lambda d: "(retired)" not in red_fox_item().text)

        # An agent's inbox from the project's agents panel.
        driver.find_element(By.CSS_SELECTOR, "aside.panel").find_element(By.LINK_TEXT, "BlueLake").click()
        wait.until(ec.url_contains("/inbox/BlueLake"))
        unread = driver.find_elements(By.CSS_SELECTOR, "#messages > li.unread")
        assert len(unread) == 2, f"BlueLake has {len(unread)} unread messages"
        shot(driver, "agent-inbox")

        # Write to two agents as the Human Overseer, from the project's composer.
        driver.find_element(By.LINK_TEXT, "work-webshop").click()
        driver.find_element(By.LINK_TEXT, "Write to the agents").click()
        form = wait.until(ec.presence_of_element_located((By.ID, "composer")))
        for name in ["GreenCastle", "RedFox"]:
            form.find_element(By.CSS_SELECTOR, f"input[name=recipients][value={name}]").click()
        form.find_element(By.NAME, "subject").send_keys("Freeze merges until the release")
        form.find_element(By.NAME, "body_md").send_keys("Finish what you hold, then **wait** for the tag.")
        shot(driver, "overseer-compose")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait.until(ec.url_contains("/message/"))
        assert "MESSAGE FROM THE HUMAN OVERSEER" in driver.find_element(By.CSS_SELECTOR, ".body").text
        shot(driver, "overseer-sent")
        driver.get(BASE + "/mail/work-webshop/inbox/RedFox")
        first = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#messages > li")))
        assert "Freeze merges until the release" in first.text, first.text
        assert "unread" in first.get_attribute("class")
        mcp_inbox = fetch_inbox_over_mcp("RedFox")
        assert mcp_inbox[0]["subject"] == "Freeze merges until the release", mcp_inbox[0]
        assert mcp_inbox[0]["from"] == "HumanOverseer" and mcp_inbox[0]["importance"] == "high"

        # Live: mail sent while the page is open appears without a reload (server push).
        driver.execute_script("window.__sameDocument = 42;")
        post(
            "/api/message/send",
            {"project_slug": "/work/webshop", "sender_name": "BlueLake", "recipient_names": ["RedFox"],
             "subject": "Pushed while you watched", "body_md": "Arrives live.", "thread_id": "T-7"},
        )
        WebDriverWait(driver, 10).until(
            lambda d: "Pushed while you watched" in d.find_element(By.ID, "messages").text
        )
        assert driver.execute_script("return window.__sameDocument") == 42, "the page reloaded"
        shot(driver, "agent-inbox-live")

        # Mark all read from the inbox page.
        driver.find_element(By.XPATH, "//button[text()='Mark all read']").click()
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#messages > li.unread"))
        shot(driver, "agent-inbox-read")

        # Delete a message from the inbox: tick it, press Delete selected, confirm.
        pushed = wait.until(lambda d: next(
            li for li in d.find_elements(By.CSS_SELECTOR, "#messages > li") if "Pushed while you watched" in li.text))
        pushed.find_element(By.CSS_SELECTOR, "input.pick").click()
        driver.find_element(By.ID, "delete-selected").click()
        WebDriverWait(driver, 5).until(ec.alert_is_present())
        driver.switch_to.alert.accept()
        wait.until(lambda d: settled(
            lambda: "Pushed while you watched" not in d.find_element(By.ID, "main").text))
        assert all(m["subject"] != "Pushed while you watched" for m in fetch_inbox_over_mcp("RedFox"))
        shot(driver, "agent-inbox-deleted")

        # Delete another from its own page: back to the project afterwards.
        driver.get(BASE + "/mail/work-webshop")
        row = wait.until(lambda d: next(
            li for li in d.find_elements(By.CSS_SELECTOR, "#messages > li") if "Flaky test in CI" in li.text))
        row.find_element(By.CSS_SELECTOR, "a.row").click()
        wait.until(ec.presence_of_element_located((By.ID, "delete-message"))).click()
        WebDriverWait(driver, 5).until(ec.alert_is_present())
        driver.switch_to.alert.accept()
        wait.until(ec.url_matches(r"/mail/work-webshop$"))
        assert "Flaky test in CI" not in driver.find_element(By.ID, "messages").text

        # The archive: the deletion is a commit of its own kind, its diff lists the removed files.
        driver.find_element(By.LINK_TEXT, "Archive").click()
        wait.until(ec.presence_of_element_located((By.ID, "archive-root")))
        shot(driver, "archive-guide")
        driver.find_element(By.LINK_TEXT, "Activity").click()

        # The page hears of Git commits: the deletion's commit shows without a reload.
        def deletion_link(d):
            links = d.find_elements(By.XPATH, "//a[contains(., 'delete: 1 message(s) via web UI')]")
            return links[0] if links else False
        wait.until(deletion_link)
        shot(driver, "archive-activity")
        wait.until(deletion_link).click()
        wait.until(ec.presence_of_element_located((By.ID, "diff")))
        statuses = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#files .status")]
        assert statuses and set(statuses) == {"deleted"}, f"a deletion removes files only: {statuses}"
        shot(driver, "archive-commit")

        # Browse the project's files down to an agent's profile.
        driver.get(BASE + "/mail/work-webshop")
        driver.find_element(By.LINK_TEXT, "Archive files").click()
        for step in ["agents/", "BlueLake/", "profile.json"]:
            wait.until(ec.presence_of_element_located((By.XPATH, f"//ul[@id='entries']//span[@class='subject' and normalize-space()='{step}']"))).click()
        file_text = wait.until(ec.presence_of_element_located((By.ID, "file"))).text
        assert '"name": "BlueLake"' in file_text, file_text
        shot(driver, "archive-file")

        # The project's timeline and its agent network.
        driver.get(BASE + "/mail/work-webshop")
        driver.find_element(By.LINK_TEXT, "Timeline").click()
        wait.until(ec.presence_of_element_located((By.ID, "timeline")))
        shot(driver, "archive-timeline")
        driver.get(BASE + "/mail/work-webshop")
        driver.find_element(By.LINK_TEXT, "Network").click()
        network = wait.until(ec.presence_of_element_located((By.ID, "network")))
        assert len(network.find_elements(By.CSS_SELECTOR, "circle")) == 4, "four agents drawn"
        shot(driver, "archive-network")

        # Time travel: RedFox's inbox as it stands now (a moment in the future).
        driver.get(BASE + "/mail/archive/time-travel")
        form = wait.until(ec.presence_of_element_located((By.ID, "time-travel")))
        Select(form.find_element(By.NAME, "project")).select_by_visible_text("work-webshop")
        form.find_element(By.NAME, "agent").send_keys("RedFox")
        driver.execute_script("arguments[0].value = '2100-01-01T00:00';", form.find_element(By.NAME, "timestamp"))
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        table = wait.until(ec.presence_of_element_located((By.ID, "snapshot")))
        assert "Freeze merges until the release" in table.text, table.text
        shot(driver, "archive-time-travel")

        # The two webshop projects are suggested as siblings; confirm them.
        driver.get(BASE + "/mail")
        siblings = wait.until(ec.presence_of_element_located((By.ID, "siblings")))
        assert "work-webshop-admin" in siblings.text, siblings.text
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#siblings button.confirm-sibling").click() or True)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#siblings li.confirmed"))
        shot(driver, "siblings-confirmed")

        # The keyboard: j selects the first row, o opens it.
        driver.get(BASE + "/mail")
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#messages > li")))
        body = driver.find_element(By.TAG_NAME, "body")
        body.send_keys("j")
        body.send_keys("j")
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#messages > li.selected")))
        second = driver.find_elements(By.CSS_SELECTOR, "#messages > li")[1]
        assert "selected" in second.get_attribute("class")
        driver.switch_to.active_element.send_keys("o")
        wait.until(ec.url_contains("/message/"))
        shot(driver, "keyboard-opened")

        # A phone-sized screen, then dark mode.
        driver.set_window_size(390, 844)
        driver.get(BASE + "/mail")
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#messages > li")))
        width = driver.execute_script("return document.documentElement.scrollWidth")
        assert width <= 390, f"the page scrolls sideways on a phone ({width}px)"
        shot(driver, "unified-inbox-phone")
        driver.set_window_size(1280, 900)
        driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
        )
        driver.get(BASE + "/mail")
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#messages > li")))
        background = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(21, 22, 20)", f"dark mode background is {background}"
        shot(driver, "unified-inbox-dark")
        no_console_errors(driver, "the run")
    finally:
        driver.quit()
    print("[browser] all checks passed")


if __name__ == "__main__":
    main()
