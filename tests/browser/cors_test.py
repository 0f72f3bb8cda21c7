"""CORS in Chromium: a page of another origin calls mailroom's MCP endpoint with fetch(), as a
browser-based client would. The server runs with HTTP_CORS_ORIGINS naming one origin
(http://localhost:PAGE_PORT): a page there reads the answer (the JSON POST needs a preflight,
which the server answers); a page of an origin not named (http://127.0.0.1:PAGE_PORT) cannot.

Usage: cors_test.py BASE_URL PAGE_PORT SCREENSHOT_DIR
"""

import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from tempfile import TemporaryDirectory

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

BASE = sys.argv[1].rstrip("/")
PAGE_PORT = int(sys.argv[2])
SHOTS = Path(sys.argv[3])

CALL = """
const done = arguments[arguments.length - 1];
fetch(arguments[0] + "/mcp", {
  method: "POST",
  headers: {"content-type": "application/json", "accept": "application/json, text/event-stream"},
  body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "tools/list"}),
}).then(r => r.json()).then(j => {
  document.body.textContent = "tools: " + j.result.tools.length;
  done("tools: " + j.result.tools.length);
}).catch(e => {
  document.body.textContent = "refused: " + e;
  done("refused: " + e);
});
"""


class QuietPages(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main():
    with TemporaryDirectory() as root:
        Path(root, "index.html").write_text("<!doctype html><title>another origin</title><body>page</body>")
        handler = partial(QuietPages, directory=root)
        pages = ThreadingHTTPServer(("127.0.0.1", PAGE_PORT), handler)
        threading.Thread(target=pages.serve_forever, daemon=True).start()
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for flag in ["--headless", "--no-sandbox", "--disable-dev-shm-usage"]:
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        driver.set_script_timeout(10)
        try:
            driver.get(f"http://localhost:{PAGE_PORT}/index.html")
            listed = driver.execute_async_script(CALL, BASE)
            assert listed.startswith("tools: ") and int(listed.split()[1]) > 30, listed
            driver.save_screenshot(str(SHOTS / "cors-listed-origin.png"))
            driver.get(f"http://127.0.0.1:{PAGE_PORT}/index.html")
            other = driver.execute_async_script(CALL, BASE)
            assert other.startswith("refused: "), f"an origin not listed read the answer: {other}"
            driver.save_screenshot(str(SHOTS / "cors-other-origin.png"))
        finally:
            driver.quit()
            pages.shutdown()
    print(f"[browser] CORS: the listed origin read the answer ({listed}); another was {other}")


if __name__ == "__main__":
    main()
