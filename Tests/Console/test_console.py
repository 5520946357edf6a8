"""The operator's console in a real browser: headless Chromium driven by Selenium, against a
real revsync-server (SQLite, ephemeral port) and real devices (the revsync CLI).

Run by scripts/test (scripts/console-tests); alone:

    python3 -m venv .build/console-venv && .build/console-venv/bin/pip install selenium
    swift build && .build/console-venv/bin/python -m unittest discover -s Tests/Console -v

Each test saves a screenshot in .build/console-screenshots/ (REVSYNC_SCREENSHOTS to change); with
REVSYNC_DOCS_IMAGES=docs/images, the pages the README shows are saved there too (at a laptop's and an
iPad's width): the screenshots in the documentation are the ones these tests take.

Every page is checked at 1280 px and at 820 px (an iPad, upright): nothing scrolls sideways, and
every button, link, field, reason and entry is inside the window, nothing clipped.
"""

import json
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request
import zlib

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("REVSYNC_BIN") or subprocess.run(
    ["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True, check=True
).stdout.strip()
SCREENSHOTS = os.environ.get("REVSYNC_SCREENSHOTS", os.path.join(ROOT, ".build", "console-screenshots"))
DOCS_IMAGES = os.environ.get("REVSYNC_DOCS_IMAGES")
LAPTOP = (1280, 900)
IPAD = (820, 1180)

# What a page must show inside the window, at every width: actions, fields, reasons, entries.
FIT_CHECK = """
const width = document.documentElement.clientWidth;
const problems = [];
if (document.documentElement.scrollWidth > width + 1) {
  problems.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' px in ' + width + ' px');
}
const watched = 'button, a, input, select, .reason, td, .entries li, .diff li, .names li, code, h1, .figure, .sides-grid span';
for (const element of document.querySelectorAll(watched)) {
  const box = element.getBoundingClientRect();
  if (box.width === 0 && box.height === 0) continue;
  if (element.closest('.hidden')) continue;
  if (box.left < -1 || box.right > width + 1) {
    problems.push(element.tagName.toLowerCase() + (element.id ? '#' + element.id : '') + ' "' + element.textContent.trim().slice(0, 40) + '" spans ' + Math.round(box.left) + '-' + Math.round(box.right) + ' px');
  }
}
// An action nobody can see is as good as off-screen: every button, link and field is shown,
// unless it waits in a closed <details>, or it is a link whose page another, visible link opens.
const actions = [...document.querySelectorAll('button, a[href], input:not([type=hidden]), select, textarea')];
const shown = (element) => {
  const box = element.getBoundingClientRect();
  const style = getComputedStyle(element);
  return box.width > 0 && box.height > 0 && style.visibility !== 'hidden' && !element.closest('.hidden');
};
const visibleLinks = new Set(actions.filter((element) => element.tagName === 'A' && shown(element)).map((element) => element.getAttribute('href')));
for (const element of actions) {
  if (shown(element) || element.closest('details:not([open])')) continue;
  if (element.tagName === 'A' && visibleLinks.has(element.getAttribute('href'))) continue;
  problems.push('hidden: ' + element.tagName.toLowerCase() + (element.id ? '#' + element.id : '') + ' "' + (element.textContent || element.name || '').trim().slice(0, 40) + '"');
}
// A card's cell is its label, then its content beside it: nothing of the content under the label.
for (const cell of document.querySelectorAll('table.cards td')) {
  const style = getComputedStyle(cell);
  const label = getComputedStyle(cell, '::before').content;
  if (!['block', 'grid'].includes(style.display) || label === 'none' || label === 'normal' || label === '""') continue;
  // Where the content's column starts: past the label's grid track, or past the padding that holds the label.
  const labelWidth = style.display === 'grid'
    ? parseFloat(style.gridTemplateColumns.split(' ')[0]) + (parseFloat(style.columnGap) || 0) : parseFloat(style.paddingLeft);
  const start = cell.getBoundingClientRect().left + labelWidth - 1;
  for (const child of cell.querySelectorAll('*')) {
    const box = child.getBoundingClientRect();
    if (box.width > 0 && box.left < start) {
      problems.push('in the label column of "' + cell.dataset.label + '": ' + child.tagName.toLowerCase() + ' "' + child.textContent.trim().slice(0, 40) + '"');
    }
  }
}
for (const element of document.querySelectorAll('main *')) {
  const style = getComputedStyle(element);
  if (style.overflowX !== 'visible' && element.scrollWidth > element.clientWidth + 1 && !element.closest('.hidden') && !element.closest('svg')) {
    problems.push('clipped: ' + element.tagName.toLowerCase() + (element.className ? '.' + element.className : '') + ' "' + element.textContent.trim().slice(0, 40) + '"');
  }
}
return problems;
"""


def chromium_driver():
    options = Options()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=%d,%d" % LAPTOP]:
        options.add_argument(argument)
    binary = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if binary:
        options.binary_location = binary
    driver_path = shutil.which("chromedriver") or "/usr/lib/chromium/chromedriver"
    return webdriver.Chrome(options=options, service=Service(executable_path=driver_path))


def solid_png(width, height, rgb):
    """A PNG of one colour, made here (no imaging library needed)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


# Whether `word` in the element `id` spans more than one line box (broken mid-word).
WORD_BROKEN = """
const element = document.getElementById(arguments[0]);
const text = element.firstChild;
const at = text.textContent.indexOf(arguments[1]);
if (at < 0) return true;
const range = document.createRange();
range.setStart(text, at);
range.setEnd(text, at + arguments[1].length);
const tops = new Set(Array.from(range.getClientRects()).map(rect => Math.round(rect.top)));
return tops.size > 1;
"""


class Server:
    """A revsync-server process on a scratch SQLite database."""

    def __init__(self, *arguments):
        self.directory = tempfile.mkdtemp(prefix="revsync-console-")
        self.database = os.path.join(self.directory, "team.sqlite")
        self.token_file = os.path.join(self.directory, "admin-token")
        self.start("0", arguments)
        with open(self.token_file) as file:
            self.admin_token = file.read().strip()

    def start(self, port, arguments):
        """Starts the process; `startup` keeps what it printed before it listened (warnings)."""
        self.process = subprocess.Popen(
            [os.path.join(BIN, "revsync-server"), "--port", port, "--database", self.database,
             "--admin-token-file", self.token_file, "--log-level", "warning", *arguments],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.startup = []
        line = self.process.stdout.readline()
        while "listening on" not in line:
            if not line:
                raise RuntimeError("revsync-server did not start: " + "".join(self.startup))
            self.startup.append(line)
            line = self.process.stdout.readline()
        self.url = re.search(r"http://127\.0\.0\.1:\d+", line).group(0)

    def restart(self, *arguments):
        """The same database served again, on the same port (devices keep their server's URL)."""
        self.process.terminate()
        self.process.wait(timeout=30)
        self.process.stdout.close()
        self.start(self.url.rsplit(":", 1)[1], arguments)

    def token(self, name, role="member", user=None):
        command = [os.path.join(BIN, "revsync-server"), "token", "create", "--database", self.database, "--name", name, "--role", role]
        if user is not None:
            command += ["--user", str(user)]
        result = subprocess.run(command, capture_output=True, text=True, check=True)
        return result.stdout.strip()

    def execute(self, sql, *arguments):
        """A statement on the server's database, as another process would run it (WAL: the server goes on)."""
        connection = sqlite3.connect(self.database, timeout=30)
        try:
            connection.execute(sql, arguments)
            connection.commit()
        finally:
            connection.close()

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.process.stdout.close()
        shutil.rmtree(self.directory, ignore_errors=True)


class Device:
    """A device: a store file driven by the revsync CLI."""

    def __init__(self, server, name, token=None, init_arguments=()):
        self.server = server
        self.store = os.path.join(server.directory, name + ".sqlite")
        self.token = token or server.token(name)
        self.run("init", "--server", server.url, *init_arguments, token=self.token)

    def run(self, *arguments, token=None, check=True):
        environment = dict(os.environ, REVSYNC_TOKEN=token) if token else None
        command = [os.path.join(BIN, "revsync"), arguments[0], *arguments[1:]]
        command += ["--store", self.store]
        result = subprocess.run(command, capture_output=True, text=True, env=environment)
        if check and result.returncode != 0:
            raise AssertionError(f"revsync {' '.join(arguments)} failed: {result.stdout} {result.stderr}")
        return result

    def sync(self, check=True):
        return self.run("sync", check=check)


def post(url, fields, headers=None):
    """A form post outside the browser; the status and headers (no redirects followed)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    data = urllib.parse.urlencode(fields).encode()
    request = urllib.request.Request(url, data=data, headers=headers or {}, method="POST")
    try:
        response = urllib.request.build_opener(NoRedirect).open(request)
        return response.status, response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.headers


class ConsoleTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(SCREENSHOTS, exist_ok=True)
        cls.server = Server()
        cls.driver = chromium_driver()
        cls.driver.implicitly_wait(0)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.server.stop()

    def setUp(self):
        self.driver.delete_all_cookies()

    def tearDown(self):
        self.driver.save_screenshot(os.path.join(SCREENSHOTS, self._testMethodName + ".png"))

    # Helpers

    def open(self, path):
        self.driver.get(self.server.url + path)

    def assert_fits(self, name, docs=False):
        """The page at a laptop's and at an iPad's width: nothing scrolls sideways, every action,
        field and reason inside the window, nothing clipped. Screenshots of both (and, with
        REVSYNC_DOCS_IMAGES and `docs`, the whole page for the documentation)."""
        for (width, height), label in [(LAPTOP, "laptop"), (IPAD, "ipad")]:
            self.driver.set_window_size(width, height)
            self.wait_for(lambda: self.driver.execute_script("return document.documentElement.clientWidth") <= width)
            problems = self.driver.execute_script(FIT_CHECK)
            self.driver.save_screenshot(os.path.join(SCREENSHOTS, f"{name}-{label}.png"))
            if docs and DOCS_IMAGES:
                full = self.driver.execute_script("return document.documentElement.scrollHeight")
                self.driver.set_window_size(width, min(max(full + 120, 600), 2200))
                suffix = "" if label == "laptop" else "-ipad"
                self.driver.save_screenshot(os.path.join(DOCS_IMAGES, f"console-{name}{suffix}.png"))
                self.driver.set_window_size(width, height)
            self.assertEqual(problems, [], f"{name} at {width} px: {problems}")
        self.driver.set_window_size(*LAPTOP)

    def text(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css).text

    def wait_for(self, condition, timeout=20, message="timed out"):
        """Polls `condition` (the page may still be loading after a click) until it is true."""
        deadline = time.time() + timeout
        while True:
            try:
                value = condition()
                if value:
                    return value
            except Exception:
                if time.time() > deadline:
                    raise
            if time.time() > deadline:
                self.fail(message)
            time.sleep(0.2)

    def submit(self, button_id):
        """Clicks a button that submits a form, and waits for the next page."""
        old = self.driver.find_element(By.TAG_NAME, "html")
        self.driver.find_element(By.ID, button_id).click()
        self.wait_for(lambda: old.id != self.driver.find_element(By.TAG_NAME, "html").id, message="the page did not change")

    def sign_in(self, token):
        self.open("/admin/login")
        self.driver.find_element(By.ID, "token").send_keys(token)
        self.submit("sign-in")

    def sign_in_as_admin(self):
        self.sign_in(self.server.admin_token)
        self.assertTrue(self.driver.current_url.endswith("/admin"), self.driver.current_url)

    def device_row(self, name):
        self.open("/admin/devices")
        for row in self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr"):
            if row.get_attribute("data-name") == name:
                return row
        return None

    def listed_row(self, name):
        """The row of the device `name` on the devices page as it is (filtered, say), or None."""
        for row in self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr"):
            if row.get_attribute("data-name") == name:
                return row
        return None

    def refusal_row(self, device):
        """The first row of the refusals page that `device` sent, or None."""
        for row in self.driver.find_elements(By.CSS_SELECTOR, "#refusals tr.refusal"):
            if row.find_element(By.CSS_SELECTOR, "td[data-label='Device']").text == device:
                return row
        return None

    def behind(self, name):
        row = self.device_row(name)
        self.assertIsNotNone(row, f"{name} is not listed")
        return int(row.find_element(By.CSS_SELECTOR, "td.behind").text.split()[0])

    def row_text(self, name, expected):
        """The device's row once it shows `expected` (what devices do is written once a second)."""
        return self.wait_for(lambda: expected in self.device_row(name).text and self.device_row(name).text,
                             message=f"{name}'s row never showed {expected}")

    # Tests

    def test_sign_in_is_refused_for_a_wrong_token_and_a_member_token(self):
        self.open("/admin")
        self.assertTrue(self.driver.current_url.endswith("/admin/login"))
        # The hint names a command that works as copied, and where the first token is.
        command = self.text("#create-command")
        self.assertIn(f"revsync-server token create --database {self.server.database} --name NAME --role admin", command)
        self.assertIn(self.server.token_file, self.text(".login"))
        self.assert_fits("login")
        self.sign_in("rs_not-a-token-at-all")
        self.assertTrue(self.driver.current_url.endswith("/admin/login"))
        self.assertIn("Unknown or revoked token", self.driver.find_element(By.ID, "error").text)
        self.sign_in(self.server.token("member for sign-in"))
        self.assertIn("only admin tokens", self.driver.find_element(By.ID, "error").text)
        self.open("/admin/devices")
        self.assertTrue(self.driver.current_url.endswith("/admin/login"))

    def test_an_admin_signs_in_with_a_strict_http_only_cookie_and_signs_out(self):
        self.sign_in_as_admin()
        self.assertEqual(self.driver.find_element(By.TAG_NAME, "h1").text, "Overview")
        cookie = self.driver.get_cookie("revsync_session")
        self.assertIsNotNone(cookie)
        self.assertTrue(cookie["httpOnly"])
        self.assertEqual(cookie["sameSite"], "Strict")
        self.assertEqual(cookie["path"], "/admin")
        self.assertFalse(cookie["secure"])  # plain HTTP, no proxy: see the next test
        self.submit("sign-out")
        self.assertTrue(self.driver.current_url.endswith("/admin/login"))
        self.open("/admin")
        self.assertTrue(self.driver.current_url.endswith("/admin/login"))

    def test_behind_a_trusted_proxy_the_cookie_is_secure(self):
        proxied = Server("--trusted-proxy", "127.0.0.1")
        try:
            with urllib.request.urlopen(proxied.url + "/admin/login") as response:
                login_cookie = response.headers["Set-Cookie"]
            csrf = re.search(r"revsync_login=([^;]+)", login_cookie).group(1)
            status, headers = post(
                proxied.url + "/admin/login", {"csrf": csrf, "token": proxied.admin_token},
                {"Cookie": "revsync_login=" + csrf, "X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"})
            self.assertEqual(status, 303)
            session = [value for value in headers.get_all("Set-Cookie") if value.startswith("revsync_session=")][0]
            for flag in ["Secure", "HttpOnly", "SameSite=Strict", "Path=/admin"]:
                self.assertIn(flag, session)
        finally:
            proxied.stop()

    def test_devices_appear_and_behind_follows_syncs_and_commits(self):
        alice = Device(self.server, "alice")
        bob = Device(self.server, "bob")
        alice.sync()
        bob.sync()
        self.sign_in_as_admin()
        self.assertIsNotNone(self.device_row("alice"))
        self.assertIsNotNone(self.device_row("bob"))
        self.assertEqual(self.behind("alice"), 0)
        bob.run("create", "teams", "name=U12")
        bob.sync()
        self.assertEqual(self.behind("alice"), 1)
        self.assertEqual(self.behind("bob"), 0)
        alice.sync()
        self.assertEqual(self.behind("alice"), 0)
        # The devices page follows by itself (it refreshes every few seconds).
        bob.run("create", "teams", "name=U14")
        bob.sync()
        def alice_behind():
            # Read in one script: the page may replace its rows between two calls.
            return self.driver.execute_script(
                """
                const row = [...document.querySelectorAll('#devices tbody tr')].find(r => r.dataset.name === 'alice');
                return row ? row.querySelector('td.behind').textContent.trim() : null;
                """)

        self.wait_for(lambda: alice_behind() == "1", message="the devices page did not follow by itself")
        self.row_text("alice", "RevSyncClient/")  # the CLI's client version
        self.row_text("alice", "schema v")  # and the schema version its app speaks
        # "A little behind" is a warning, not an alarm: not red.
        colour = self.driver.execute_script(
            "const row = [...document.querySelectorAll('#devices tbody tr')].find(r => r.dataset.name === 'alice');"
            "return getComputedStyle(row.querySelector('td.behind')).color;")
        self.assertNotEqual(colour, "rgb(207, 34, 46)")
        # Every Revoke… is on screen, at a laptop's width and on an iPad.
        for name in [f"spare {index}" for index in range(8)]:
            self.server.token(name)
        self.open("/admin/devices")
        self.assert_fits("devices")

    def test_a_repaired_device_is_flagged_and_proven_devices_are_counted(self):
        dana = Device(self.server, "dana")
        dana.run("create", "venues", "name=North")
        dana.run("create", "venues", "name=South")
        dana.sync()
        # Another program changes a row behind the store's back; the next sync repairs it.
        connection = sqlite3.connect(dana.store)
        connection.execute("UPDATE venues SET name = 'Tampered' WHERE name = 'North'")
        connection.commit()
        connection.close()
        synced = dana.sync()
        self.assertIn("Repaired 1 record that differed from the server: venues 1 changed", synced.stdout)
        self.sign_in_as_admin()
        row = self.row_text("dana", "repaired 1 record")
        self.assertIn("at the latest", row)
        cell = self.device_row("dana").find_element(By.CSS_SELECTOR, "td.verified")
        self.assertEqual(cell.find_element(By.CSS_SELECTOR, ".flag.repair").text.split(" ")[:3], ["repaired", "1", "record"])
        self.assert_fits("devices-verified")
        self.device_row("dana").find_element(By.CSS_SELECTOR, "td.name a").click()
        self.wait_for(lambda: "at the latest" in self.text("#device-verified"))
        self.assertIn("repaired 1 record", self.text("#device-verified"))
        self.assert_fits("device-verified")
        self.open("/admin")
        proven, _, total = self.text("#verified").partition(" of ")
        self.assertGreaterEqual(int(proven), 1)
        self.assertGreaterEqual(int(total), int(proven))

    def test_a_token_created_in_the_console_syncs(self):
        self.sign_in_as_admin()
        self.open("/admin/devices")
        self.driver.find_element(By.ID, "new-name").send_keys("carol")
        self.submit("create")
        token = self.driver.find_element(By.ID, "new-token").text
        self.assertTrue(token.startswith("rs_"))
        self.driver.find_element(By.ID, "copy").click()
        carol = Device(self.server, "carol", token=token)
        result = carol.sync()
        self.assertIn("now at revision", result.stdout)
        self.assertIsNotNone(self.device_row("carol"))

    def test_a_token_revoked_in_the_console_gets_401(self):
        dave = Device(self.server, "dave")
        dave.sync()
        self.sign_in_as_admin()
        row = self.device_row("dave")
        row.find_element(By.LINK_TEXT, "Revoke…").click()
        self.wait_for(lambda: "Revoke the token" in self.driver.find_element(By.TAG_NAME, "h1").text)
        self.assertIn("Revoke the token of dave", self.driver.find_element(By.TAG_NAME, "h1").text)
        self.submit("confirm")
        self.assertTrue(self.driver.current_url.endswith("/admin/devices"))
        self.assertIn("revoked", self.device_row("dave").get_attribute("class"))
        request = urllib.request.Request(
            self.server.url + "/sync", data=b'{"maxRevision": 0, "changeSets": []}',
            headers={"Authorization": "Bearer " + dave.token, "Content-Type": "application/json"})
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request)
        self.assertEqual(refused.exception.code, 401)
        result = dave.sync(check=False)
        self.assertNotEqual(result.returncode, 0)

    def test_revoke_and_wipe_confirms_what_the_device_holds_and_shows_the_receipt(self):
        """A lost tablet: the device page's *Revoke and wipe…* says what the device holds, the
        order stands ("wipe pending"), the device wipes itself at its next sync (non-zero exit,
        its store gone) and the page shows the receipt; at a laptop's and an iPad's width."""
        lost = Device(self.server, "lost-tablet")
        lost.run("create", "players", "first_name=Frank", "last_name=Lost")
        lost.sync()
        lost.run("create", "players", "first_name=Unsent", "last_name=Edit")
        self.sign_in_as_admin()
        self.open("/admin/devices")
        self.device_row("lost-tablet").find_element(By.TAG_NAME, "a").click()
        self.wait_for(lambda: self.driver.find_elements(By.ID, "revoke-and-wipe"))
        self.driver.find_element(By.ID, "revoke-and-wipe").click()
        self.wait_for(lambda: "Revoke and wipe lost-tablet" in self.driver.find_element(By.TAG_NAME, "h1").text)
        page = self.driver.find_element(By.TAG_NAME, "body").text
        # What it holds, counted: the data set's records at the revision it last received, and
        # the change sets it last reported unsynced (none: the edit after its sync is unreported).
        overview = json.loads(urllib.request.urlopen(urllib.request.Request(
            self.server.url + "/admin/api/overview", headers={"Authorization": "Bearer " + self.server.admin_token})).read())
        records = sum(overview["records"].values())
        devices = json.loads(urllib.request.urlopen(urllib.request.Request(
            self.server.url + "/admin/api/devices", headers={"Authorization": "Bearer " + self.server.admin_token})).read())
        revision = next(d for d in devices["devices"] if d["name"] == "lost-tablet")["revision"]
        noun = "record" if records == 1 else "records"
        self.assertIn(f"Up to {records} {noun} (the data set at revision {revision}, the last it received).", page)
        self.assertIn("Unsynced change sets, as it last reported: 0 (discarded", page)
        self.assert_fits("revoke-and-wipe")
        self.submit("confirm")
        self.wait_for(lambda: self.driver.find_elements(By.ID, "device-wipe"))
        self.assertIn("Wipe pending", self.text("#device-wipe"))
        self.open("/admin/devices")
        self.assertIn("wipe pending", self.device_row("lost-tablet").text)
        result = lost.sync(check=False)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("wiped", result.stderr)
        self.assertFalse(os.path.exists(lost.store))
        self.device_row("lost-tablet").find_element(By.TAG_NAME, "a").click()
        self.wait_for(lambda: "Wiped" in self.text("#device-wipe"))
        self.assertIn("1 unsynced change set", self.text("#device-wipe"))
        self.assert_fits("wiped-device")

    def test_a_wiped_device_is_its_own_state_and_offers_nothing_to_do(self):
        """A wiped device is neither current nor proven: its page says wiped, offers no Revert…
        and no Mark handled, and its refusal leaves the count of those not handled."""
        lost = Device(self.server, "wiped-with-refusal")
        colleague = Device(self.server, "wiped-colleague")
        lost.run("create", "venues", "name=Shared")
        lost.sync()
        colleague.sync()
        venue = re.search(r"^(\d+)\t", lost.run("list", "venues").stdout, re.M).group(1)
        colleague.run("update", "venues", venue, "name=Colleague's")
        colleague.sync()
        lost.run("update", "venues", venue, "name=Lost's")
        lost.sync()
        self.sign_in_as_admin()
        self.wait_for(lambda: "wiped-with-refusal" in self.text("#attention"), message="the refusal is not counted")
        self.device_row("wiped-with-refusal").find_element(By.TAG_NAME, "a").click()
        self.wait_for(lambda: self.driver.find_elements(By.ID, "revoke-and-wipe"))
        self.assertTrue(self.driver.find_elements(By.CSS_SELECTOR, "#refused button"), "Mark handled before the wipe")
        self.driver.find_element(By.ID, "revoke-and-wipe").click()
        self.wait_for(lambda: self.driver.find_elements(By.ID, "confirm"))
        self.submit("confirm")
        self.wait_for(lambda: self.driver.find_elements(By.ID, "device-wipe"))
        self.assertNotEqual(lost.sync(check=False).returncode, 0)
        self.open("/admin/devices")
        self.device_row("wiped-with-refusal").find_element(By.TAG_NAME, "a").click()
        self.wait_for(lambda: "Wiped" in self.text("#device-wipe"))
        self.assertIn("wiped", self.text("#device-revision"))
        self.assertIn("wiped", self.text("#device-verified"))
        self.assertNotIn("latest", self.text("#device-verified"))
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "#refused button"), [], "no Mark handled")
        self.assertIn("nothing to handle", self.text("#refused"))
        self.assertEqual([link for link in self.driver.find_elements(By.CSS_SELECTOR, "#change-sets a") if "Revert" in link.text], [])
        self.assert_fits("wiped-device-page")
        self.open("/admin")
        self.wait_for(lambda: "wiped-with-refusal" not in self.text("#attention"), message="the wiped device still needs attention")
        self.open("/admin/devices?currency=wiped")
        self.assertIsNotNone(self.listed_row("wiped-with-refusal"))

    def test_a_refused_change_set_appears_on_the_refusals_page(self):
        erin = Device(self.server, "erin")
        frank = Device(self.server, "frank")
        erin.run("create", "teams", "name=Refused")
        erin.sync()
        frank.sync()
        listed = frank.run("list", "teams").stdout
        permanent = [line.split("\t")[0] for line in listed.splitlines() if "Refused" in line][0]
        erin.run("update", "teams", permanent, "name=Erin's")
        frank.run("update", "teams", permanent, "name=Frank's")
        erin.sync()
        frank.sync()
        self.sign_in_as_admin()
        self.open("/admin/refusals")
        table = self.driver.find_element(By.ID, "refusals").text
        self.assertIn("frank", table)
        self.assertIn("stale_revision", table)
        self.row_text("frank", "stale_revision")
        # What frank wrote, against what he had and what erin had written.
        self.assertIn('"Refused"', table)
        self.assertIn('"Frank\'s"', table)
        self.assertIn('"Erin\'s"', table)
        self.assert_fits("refusals-handling")
        # Marked handled, it leaves the list (and the overview's count); shown again on demand, with who did it.
        self.open("/admin")
        waiting = int(self.text("#refusals-card .count"))
        self.open("/admin/refusals")
        row = self.refusal_row("frank")
        history = row.find_element(By.CSS_SELECTOR, ".sides-title a").get_attribute("href")
        self.assertIn(f"/admin/history?entity=teams&id={permanent}", history)
        row.find_element(By.XPATH, ".//button[text()='Mark handled']").click()
        self.wait_for(lambda: self.refusal_row("frank") is None, message="the handled refusal stayed")
        self.open("/admin")
        self.assertEqual(int(self.text("#refusals-card .count")), waiting - 1)
        self.open("/admin/refusals")
        self.driver.find_element(By.ID, "toggle-handled").click()
        self.wait_for(lambda: "handled=1" in self.driver.current_url)
        row = self.refusal_row("frank")
        self.assertIn("handled by admin", row.text)
        self.assertIn("handled", row.get_attribute("class"))
        self.assert_fits("refusals-handled")
        row.find_element(By.XPATH, ".//button[text()='Reopen']").click()
        self.wait_for(lambda: "handled by" not in self.refusal_row("frank").text, message="not reopened")
        self.open("/admin/refusals")
        self.assertIsNotNone(self.refusal_row("frank"))
        # Without the session's CSRF token nothing is marked.
        status = self.driver.execute_async_script(
            """
            const done = arguments[arguments.length - 1];
            const row = [...document.querySelectorAll('#refusals tr.refusal')].find(r => r.textContent.includes('frank'));
            fetch("/admin/refusals/handled", {method: "POST", credentials: "same-origin", redirect: "manual",
                body: new URLSearchParams({device: row.dataset.device, changeSet: row.dataset.changeSet, handled: "1"})}).then(r => done(r.status));
            """)
        self.assertEqual(status, 403)
        self.open("/admin/refusals")
        self.assertIsNotNone(self.refusal_row("frank"))

    def test_a_post_without_the_csrf_token_is_refused(self):
        self.sign_in_as_admin()
        self.open("/admin/devices")
        status = self.driver.execute_async_script(
            """
            const done = arguments[arguments.length - 1];
            fetch("/admin/devices", {method: "POST", credentials: "same-origin",
                body: new URLSearchParams({name: "mallory", role: "admin"})}).then(r => done(r.status));
            """)
        self.assertEqual(status, 403)
        self.assertIsNone(self.device_row("mallory"))
        # With a wrong token too.
        status = self.driver.execute_async_script(
            """
            const done = arguments[arguments.length - 1];
            fetch("/admin/devices", {method: "POST", credentials: "same-origin",
                body: new URLSearchParams({name: "mallory", role: "admin", csrf: "guessed"})}).then(r => done(r.status));
            """)
        self.assertEqual(status, 403)
        self.assertIsNone(self.device_row("mallory"))

    def test_pages_send_a_strict_content_security_policy(self):
        with urllib.request.urlopen(self.server.url + "/admin/login") as response:
            policy = response.headers["Content-Security-Policy"]
        self.assertIn("default-src 'none'", policy)
        self.assertIn("script-src 'self'", policy)
        self.assertIn("frame-ancestors 'none'", policy)
        self.driver.get_log("browser")  # what earlier tests left
        self.sign_in_as_admin()
        self.open("/admin/devices")
        errors = [entry for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]
        self.assertEqual(errors, [])

    def test_the_layout_check_catches_planted_overflows(self):
        """The check every page passes can fail: on the overview, a button pushed past the
        window, a table cell that scrolls the page sideways and a box that clips its text are
        each reported, at a laptop's and at an iPad's width."""
        self.sign_in_as_admin()
        for (width, height) in [LAPTOP, IPAD]:
            self.driver.set_window_size(width, height)
            self.open("/admin")
            self.assertEqual(self.driver.execute_script(FIT_CHECK), [], "the page fits before anything is planted")
            self.driver.execute_script("""
              const main = document.querySelector('main');
              const button = document.createElement('button');
              button.textContent = 'planted-off-screen';
              button.style.cssText = 'position: relative; left: 3000px';
              main.appendChild(button);
              const table = document.createElement('table');
              table.innerHTML = '<tr><td>planted-' + 'x'.repeat(600) + '</td></tr>';
              table.querySelector('td').style.whiteSpace = 'nowrap';
              main.appendChild(table);
              const box = document.createElement('div');
              box.textContent = 'planted-clipped ' + 'y'.repeat(400);
              box.style.cssText = 'width: 100px; overflow: hidden; white-space: nowrap';
              main.appendChild(box);
            """)
            problems = " | ".join(self.driver.execute_script(FIT_CHECK))
            self.assertIn("the page scrolls sideways", problems, f"at {width} px")
            self.assertIn('button "planted-off-screen" spans', problems, f"at {width} px")
            self.assertIn('td "planted-', problems, f"at {width} px")
            self.assertIn('clipped: div "planted-clipped', problems, f"at {width} px")
        self.driver.set_window_size(*LAPTOP)

    def test_the_overview_and_history_pages(self):
        gina = Device(self.server, "gina")
        gina.run("create", "teams", "name=History")
        gina.sync()
        self.sign_in_as_admin()
        self.assertEqual(self.driver.find_element(By.ID, "revision").text, json.load(
            urllib.request.urlopen(self.server.url + "/health"))["maxRevision"].__str__())
        self.assertTrue(self.driver.find_element(By.CSS_SELECTOR, ".chart svg").is_displayed())
        # Current devices are counted, not named; their bucket leads to them.
        current = self.driver.find_element(By.ID, "currency-current")
        self.assertGreaterEqual(int(current.find_element(By.CSS_SELECTOR, ".count").text), 1)
        self.assertNotIn("gina", current.text)
        # Devices per schema version, so that an operator sees when one can be retired.
        self.assertRegex(self.text("#schema-versions"), r"v\d+: \d+ \(latest\)")
        self.assert_fits("overview", docs=True)
        current.click()
        self.wait_for(lambda: "currency=current" in self.driver.current_url)
        self.assertIsNotNone(self.listed_row("gina"))
        listed = gina.run("list", "teams").stdout
        team = [line.split("\t")[0] for line in listed.splitlines() if "History" in line][0]
        self.open(f"/admin/history?entity=teams&id={team}")
        self.assertIn("create", self.driver.find_element(By.ID, "history").text)
        self.assertIn("gina", self.driver.find_element(By.ID, "history").text)

    def test_a_token_nobody_used_yet_has_never_synced(self):
        self.server.token("fresh tablet")
        self.sign_in_as_admin()
        self.assertGreaterEqual(int(self.text("#currency-neverSynced .count")), 1)
        # A token made a moment ago is not a worry.
        self.assertNotIn("fresh tablet", self.text("#attention"))
        self.open("/admin/devices?currency=neverSynced")
        self.assertIsNotNone(self.listed_row("fresh tablet"))
        for bucket in ["silent", "behind", "farBehind", "current"]:
            self.open(f"/admin/devices?currency={bucket}")
            self.assertIsNone(self.listed_row("fresh tablet"), bucket)
        overview = json.loads(urllib.request.urlopen(urllib.request.Request(
            self.server.url + "/admin/api/overview", headers={"Authorization": "Bearer " + self.server.admin_token})).read())
        self.assertIn("fresh tablet", overview["fleet"]["neverSynced"]["devices"])
        row = self.device_row("fresh tablet")
        self.assertIn("never synced", row.text)
        self.assertNotIn("behind", row.find_element(By.CSS_SELECTOR, "td.behind").text)

    def test_a_refused_change_set_shows_why_and_offers_no_revert(self):
        # A coach's phone with two refusals and no commits (the page's revision is never a row's).
        owner = Device(self.server, "owner")
        coach = Device(self.server, "coach phone")
        owner.run("create", "teams", "name=Refusals U12")
        owner.sync()
        coach.sync()
        team = [line.split("\t")[0] for line in coach.run("list", "teams").stdout.splitlines() if "Refusals U12" in line][0]
        for name in ["First try", "Second try"]:
            owner.run("update", "teams", team, f"name=Owner {name}")
            owner.sync()
            coach.run("update", "teams", team, f"name=Coach {name}")
            coach.sync()
        self.sign_in_as_admin()
        coach_id = self.device_row("coach phone").get_attribute("id").split("-")[1]
        self.open(f"/admin/devices/{coach_id}")
        refused = self.driver.find_elements(By.CSS_SELECTOR, "#refused tr.refused")
        self.assertEqual(len(refused), 2)
        for row in refused:
            self.assertIn("stale_revision", row.text)
            self.assertIn("was changed by another device", row.text)
        # Base, mine and theirs of each refused record (both refusals may share a second, so in
        # either order); the attribute another device changed is marked.
        expected = {("Owner First try", "Coach Second try", "Owner Second try"), ("Refusals U12", "Coach First try", "Owner First try")}
        shown = set()
        for row in refused:
            cells = [cell.text for cell in row.find_elements(By.CSS_SELECTOR, ".sides-grid span")]
            self.assertEqual(cells[:5], ["Attribute", "Base", "Mine", "Theirs", "name\nchanged by others"], cells)
            shown.add(tuple(cell.strip('"') for cell in cells[5:]))
            self.assertIn(f"teams #{team}: update, based on revision", row.find_element(By.CSS_SELECTOR, ".sides-title").text)
        self.assertEqual(shown, expected)
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "a[href*='/admin/revert']"), [])
        self.assertIn("None kept", self.text("#change-sets"))
        self.assert_fits("device-refused")
        # The owner's page: each commit with the Revert… of its own revision.
        owner_id = self.device_row("owner").get_attribute("id").split("-")[1]
        self.open(f"/admin/devices/{owner_id}")
        links = [a.get_attribute("href") for a in self.driver.find_elements(By.CSS_SELECTOR, "#change-sets a")]
        revisions = [row.find_element(By.CSS_SELECTOR, "td").text for row in self.driver.find_elements(By.CSS_SELECTOR, "#change-sets tr.committed")]
        self.assertEqual(len(links), 3)
        for revision, link in zip(revisions, links):
            self.assertIn(f"revision={revision}&", link)
        self.assert_fits("device", docs=True)
        self.open("/admin/refusals")
        self.assert_fits("refusals", docs=True)

    def test_an_image_attachment_is_a_thumbnail_in_the_history(self):
        # A server whose players have a photo: the demo schema, served by the class's server, plus one attribute.
        with urllib.request.urlopen(self.server.url + "/schema") as response:
            schema = json.load(response)
        schema["version"] = 2
        schema["entities"]["players"]["attributes"]["photo"] = {"type": "attachment"}
        directory = tempfile.mkdtemp(prefix="revsync-console-schema-")
        schema_file = os.path.join(directory, "schema.json")
        with open(schema_file, "w") as file:
            json.dump(schema, file)
        png = os.path.join(directory, "knee.png")
        with open(png, "wb") as file:
            file.write(solid_png(64, 48, (200, 40, 40)))
        main = self.server
        server = Server("--schema", schema_file)
        try:
            self.server = server
            medic = Device(server, "medic")
            medic.run("create", "players", "first_name=Ana", "last_name=Lopez", "photo=@" + png)
            medic.sync()
            self.sign_in_as_admin()
            self.open("/admin/history?entity=players&id=1")
            image = self.wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, "figure.thumbnail img"), message="no thumbnail")[0]
            self.wait_for(lambda: self.driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image) == 64,
                          message="the thumbnail did not load")
            self.assertEqual(image.get_attribute("alt"), "photo: knee.png")
            self.assertIn("photo: knee.png", self.text("figure.thumbnail figcaption"))
            self.assert_fits("history-thumbnail")
        finally:
            self.server = main
            self.driver.delete_all_cookies()
            server.stop()
            shutil.rmtree(directory, ignore_errors=True)

    def test_a_device_on_a_retired_version_needs_attention_until_its_app_is_updated(self):
        """Raising minimumVersion while a tablet still speaks the old version: the server names it
        at start, the overview lists it, the tablet's sync is refused (426) with its edit kept,
        and it needs attention until its app is updated, when the edit goes at once."""
        main = self.server
        server = Server()
        directory = tempfile.mkdtemp(prefix="revsync-console-schema-")
        try:
            self.server = server
            with urllib.request.urlopen(server.url + "/schema") as response:
                schema = json.load(response)
            version = schema["version"]
            tablet = Device(server, "old tablet", init_arguments=("--schema-version", str(version)))
            tablet.sync()
            # Version + 1 adds an attribute with a default and retires the tablet's version.
            schema["version"] = version + 1
            schema["minimumVersion"] = version + 1
            schema["entities"]["teams"]["attributes"]["colour"] = {"type": "text", "required": True, "default": "blue"}
            schema_file = os.path.join(directory, "schema.json")
            with open(schema_file, "w") as file:
                json.dump(schema, file)
            server.restart("--schema", schema_file)
            warning = "".join(server.startup)
            self.assertIn("old tablet (v%d)" % version, warning)
            self.assertIn("minimumVersion %d" % (version + 1), warning)

            tablet.run("create", "teams", "name=Kept U10")
            refused = tablet.sync(check=False)
            self.assertNotEqual(refused.returncode, 0)
            self.assertIn("426 upgrade_required", refused.stderr)
            self.assertIn("pending change sets: 1", tablet.run("status").stdout)

            self.sign_in_as_admin()
            self.wait_for(lambda: "old tablet" in self.text("#attention"), message="the refused tablet does not need attention")
            self.assertIn("retired schema version %d" % version, self.text("#attention"))
            retired = self.text("#retired-versions")
            self.assertIn("1 on retired schema versions", retired)
            self.assertIn("old tablet (v%d)" % version, retired)
            self.assert_fits("overview-retired")
            row = self.row_text("old tablet", "refused: a retired schema version")
            # Its page says so on a line of its own; the client tile keeps its words whole.
            self.device_row("old tablet").find_element(By.TAG_NAME, "a").click()
            self.wait_for(lambda: self.driver.find_elements(By.ID, "device-version-refusal"))
            self.assertIn("retired", self.text("#device-version-refusal"))
            self.assertNotIn("retired", self.text("#device-client"))
            for width, height in (LAPTOP, IPAD):
                self.driver.set_window_size(width, height)
                broken = self.driver.execute_script(WORD_BROKEN, "device-client", "RevSyncClient/")
                self.assertFalse(broken, f"the client's name is broken across lines at {width} px")
            self.driver.set_window_size(*LAPTOP)
            self.assert_fits("device-retired")
            # The change set the refused request carried waits too.
            self.assertEqual(self.device_row("old tablet").find_element(By.CSS_SELECTOR, "td[data-label='Pending']").text, "1", row)
            self.assert_fits("devices-retired")

            # The app is updated: its next sync upgrades the store first and sends the edit.
            tablet.run("pin", "--latest")
            synced = tablet.sync()
            self.assertIn("Sent 1 change set", synced.stdout)
            self.assertIn("teams.colour added", synced.stdout)
            self.assertIn("pending change sets: 0", tablet.run("status").stdout)
            self.open("/admin")
            self.wait_for(lambda: "old tablet" not in self.text("#attention"), message="the updated tablet still needs attention")
            self.assertEqual(self.driver.find_elements(By.ID, "retired-versions"), [])
        finally:
            self.server = main
            self.driver.delete_all_cookies()
            server.stop()
            shutil.rmtree(directory, ignore_errors=True)

    def test_history_is_a_diff_with_revert_only_where_possible(self):
        hana = Device(self.server, "hana")
        hana.run("create", "teams", "name=Hana U12")
        hana.sync()
        team = [line.split("\t")[0] for line in hana.run("list", "teams").stdout.splitlines() if "\tHana U12\t" in line][0]
        hana.run("update", "teams", team, "name=Hana U12 Lions")
        hana.sync()
        self.sign_in_as_admin()
        self.open(f"/admin/history?entity=teams&id={team}")
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#history tbody tr")
        self.assertEqual([row.find_element(By.CSS_SELECTOR, ".operation").text for row in rows], ["create", "update"])
        self.assertIn('name: "Hana U12" → "Hana U12 Lions"', rows[1].text)
        # The whole record, on demand.
        rows[1].find_element(By.TAG_NAME, "summary").click()
        self.assertIn('name = "Hana U12 Lions"', rows[1].find_element(By.CSS_SELECTOR, "ul.whole").text)
        # The create has a later change: its reason instead of Revert….
        self.assertEqual(rows[0].find_elements(By.LINK_TEXT, "Revert…"), [])
        self.assertIn("Cannot be reverted", rows[0].text)
        self.assert_fits("history", docs=True)
        rows[1].find_element(By.LINK_TEXT, "Revert…").click()
        self.wait_for(lambda: "Revert revision" in self.text("h1"))
        self.assertIn("teams: 1 record restored", self.text("#details"))
        confirm = self.driver.find_element(By.ID, "confirm").rect
        cancel = self.driver.find_element(By.ID, "cancel").rect
        self.assertGreaterEqual(cancel["x"] - (confirm["x"] + confirm["width"]), 8, "Revert and Cancel touch")
        self.assert_fits("revert")
        self.submit("confirm")
        self.assertIn("was reverted as revision", self.text("#message"))
        self.driver.find_element(By.ID, "back").click()
        self.wait_for(lambda: "/admin/history?entity=teams" in self.driver.current_url)
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#history tbody tr")
        self.assertIn("a revert of revision", rows[-1].text)
        self.assertIn("admin (admin)", rows[-1].text)
        self.assertIn("already reverted", rows[-2].text)
        # A lookup that cannot be answered says why.
        self.open("/admin/history?entity=teams&id=abc")
        self.assertIn("whole number", self.text("#error"))

    def test_a_record_with_no_history_kept_can_be_erased(self):
        """A seeded record (its history gone: seeded, or older than the history kept) still
        offers Erase…; an ID no record has does not."""
        kim = Device(self.server, "kim")
        kim.run("create", "players", "first_name=Kim", "last_name=Seeded")
        kim.sync()
        player = [line.split("\t")[0] for line in kim.run("list", "players").stdout.splitlines() if "Seeded" in line][0]
        self.server.execute("DELETE FROM _rs_history WHERE entity = 'players' AND record_id = ?", int(player))
        self.sign_in_as_admin()
        self.open(f"/admin/history?entity=players&id={player}")
        self.assertIn("no change kept (it was seeded", self.text("h2, #heading, main"))
        self.driver.find_element(By.ID, "erase").click()
        self.wait_for(lambda: "Erase players" in self.text("h1"))
        self.assertIn('first_name = "Kim"', self.text("#record-values"))
        self.open("/admin/history?entity=players&id=987654")
        self.assertEqual(self.driver.find_elements(By.ID, "erase"), [])

    def test_erasing_a_record_from_its_history_and_the_receipt(self):
        ivy = Device(self.server, "ivy")
        jon = Device(self.server, "jon")
        ivy.run("create", "players", "first_name=Ivy", "last_name=Erase-Me", "position=Forward")
        ivy.sync()
        player = [line.split("\t")[0] for line in ivy.run("list", "players").stdout.splitlines() if "Erase-Me" in line][0]
        ivy.run("update", "players", player, "position=Keeper", "last_name=Erase-Me-Too")
        ivy.sync()
        jon.sync()
        self.sign_in_as_admin()
        # Found by a value, in any case: a person is known by name, not by ID.
        self.open("/admin/history")
        self.driver.find_element(By.CSS_SELECTOR, "#find-attribute option[value='players.last_name']").click()
        self.driver.find_element(By.ID, "find-value").send_keys("erase-me-TOO")
        self.submit("find-records")
        self.assertIn("players whose last_name contains", self.text("#found-heading"))
        self.assertIn('first_name = "Ivy"', self.text("#found"))
        self.assert_fits("history-find")
        self.driver.find_element(By.LINK_TEXT, f"players {player}").click()
        self.wait_for(lambda: f"id={player}" in self.driver.current_url)
        self.driver.find_element(By.ID, "erase").click()
        self.wait_for(lambda: "Erase players" in self.text("h1"))
        self.assertIn("players: 1 record deleted", self.text("#reach"))
        # The confirmation shows what the record holds, so the operator knows whose it is.
        values = self.text("#record-values")
        self.assertIn('first_name = "Ivy"', values)
        self.assertIn('last_name = "Erase-Me-Too"', values)
        self.assert_fits("erase", docs=True)
        # Without a reason the browser does not send it.
        self.driver.find_element(By.ID, "confirm").click()
        self.assertIn("Erase players", self.text("h1"))
        # A required attribute is offered, marked: apps may not expect null there.
        self.assertIn("last_name (required)", self.text("#what"))
        self.driver.find_element(By.CSS_SELECTOR, "input[value='position']").click()
        self.driver.find_element(By.ID, "reason").send_keys("GDPR request 2026-41")
        self.submit("confirm")
        self.assertIn("erased position of players", self.text("#message"))
        # The history shows the values as erased, never as they were.
        self.open(f"/admin/history?entity=players&id={player}")
        history = self.text("#history")
        self.assertIn("erased (erasure 1)", history)
        self.assertNotIn("Forward", history)
        self.assertNotIn("Keeper", history)
        # The receipt: neither device has synced since.
        self.open("/admin/erasures")
        row = self.text("#erasure-1")
        self.assertIn("players " + player + ": position", row)
        # Devices of other tests synced before the player was written: they never held it.
        erased, total = [int(n) for n in re.search(r"(\d+) of (\d+)", row).groups()]
        self.assertEqual(total - erased, 2, row)
        self.assertIn("ivy", row)
        self.assertIn("GDPR request 2026-41", row)
        # Two devices still holding: on an iPad both links stay beside "Still holding", not under it.
        self.assert_fits("erasures-holding")
        self.assertIn("holds erased data (erasure 1)", self.row_text("jon", "holds erased data"))
        self.assert_fits("devices-erasure")
        self.open("/admin")
        self.assertIn("jon holds erased data (erasure 1)", self.text("#attention"))
        self.assertIn(f"#1 players {player}", self.text("#erasures-card"))
        self.assertIn("jon", self.text("#erasures-card"))
        # The history names the admin who asked, not "server".
        self.open(f"/admin/history?entity=players&id={player}")
        self.assertIn("admin (admin)", self.driver.find_elements(By.CSS_SELECTOR, "#history tbody tr")[-1].text)
        ivy.sync()
        self.open("/admin/erasures")
        self.wait_for(lambda: f"{erased + 1} of {total}" in self.text("#erasure-1"))
        self.assert_fits("erasures", docs=True)
        self.assertNotIn("holds erased data", self.device_row("ivy").text)
        jon.sync()
        self.open("/admin/erasures")
        self.wait_for(lambda: f"{total} of {total} · complete" in self.text("#erasure-1"))

    def test_a_fleet_of_49_devices(self):
        """The console as the issue tried it: 49 tokens, a few devices syncing, some needing attention."""
        fleet = Server()
        try:
            names = [f"tablet {index:02d}" for index in range(1, 50)]
            tokens = {name: fleet.token(name, role="viewer" if index % 10 == 0 else "member") for index, name in enumerate(names, 1)}
            writer = Device(fleet, "tablet 01", token=tokens["tablet 01"])
            other = Device(fleet, "tablet 02", token=tokens["tablet 02"])
            readers = [Device(fleet, name, token=tokens[name]) for name in ["tablet 03", "tablet 04"]]
            writer.run("create", "teams", "name=Fleet U12")
            writer.sync()
            other.sync()
            for reader in readers:
                reader.sync()
            # A refusal waiting on tablet 02, and two tokens made days ago that nobody used.
            team = [line.split("\t")[0] for line in other.run("list", "teams").stdout.splitlines() if "Fleet U12" in line][0]
            writer.run("update", "teams", team, "name=Fleet U12 Lions")
            other.run("update", "teams", team, "name=Fleet U12 Tigers")
            writer.sync()
            other.sync()
            fleet.execute("UPDATE _rs_devices SET created_at = created_at - 3 * 86400 WHERE name IN ('tablet 48', 'tablet 49')")
            self.driver.delete_all_cookies()
            self.driver.get(fleet.url + "/admin/login")
            self.driver.find_element(By.ID, "token").send_keys(fleet.admin_token)
            self.submit("sign-in")

            # The overview names only the devices that need attention, and counts the rest.
            attention = self.text("#attention")
            self.assertIn("tablet 02 1 refusal not handled", attention)
            self.assertIn("tablet 48 token made 3", attention)
            self.assertIn("tablet 49", attention)
            self.assertNotIn("tablet 30", self.text("#content"))
            self.assertEqual(int(self.text("#attention .count")), 3)
            self.assertEqual(int(self.text("#currency-neverSynced .count")), 45 + 1)  # and the admin token
            self.assertEqual(int(self.text("#refusals-card .count")), 1)
            self.assertIn("tablet 02", self.text("#refusals-card"))
            for (width, height) in [LAPTOP, IPAD]:
                self.driver.set_window_size(width, height)
                tall = self.driver.execute_script("return document.documentElement.scrollHeight")
                self.assertLess(tall, 2600, f"the overview is {tall} px tall at {width} px")
            self.driver.set_window_size(*LAPTOP)
            self.assert_fits("overview-fleet", docs=True)

            # The devices page: the token form first, then a filter by name, role and currency.
            self.driver.get(fleet.url + "/admin/devices")
            for (width, height) in [LAPTOP, IPAD]:
                self.driver.set_window_size(width, height)
                top = self.driver.find_element(By.ID, "create-token").rect["y"]
                self.assertLess(top, 300, f"the create-token form is {top} px down at {width} px")
                self.assertLess(self.driver.find_element(By.ID, "filter").rect["y"], height)
            self.driver.set_window_size(*LAPTOP)
            self.driver.find_element(By.ID, "filter-name").send_keys("TABLET 0")
            self.submit("apply-filter")
            self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")), 9)
            self.assertIn("9 of 50 devices match", self.text("#shown"))
            # Sorting keeps the filter.
            self.driver.find_element(By.CSS_SELECTOR, "#devices thead a[href*='sort=role']").click()
            self.wait_for(lambda: "sort=role" in self.driver.current_url)
            self.assertIn("name=TABLET", self.driver.current_url)
            self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")), 9)
            self.driver.get(fleet.url + "/admin/devices?role=viewer")
            self.assertEqual({row.get_attribute("data-name") for row in self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")},
                             {f"tablet {index:02d}" for index in range(10, 50, 10)})
            self.driver.get(fleet.url + "/admin/devices?currency=attention")
            self.assertEqual({row.get_attribute("data-name") for row in self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")},
                             {"tablet 02", "tablet 48", "tablet 49"})
            self.driver.get(fleet.url + "/admin/devices?currency=current&name=tablet")
            self.assertEqual({row.get_attribute("data-name") for row in self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")},
                             {"tablet 01", "tablet 02"})
            self.driver.get(fleet.url + "/admin/devices?name=nobody")
            self.assertIn("No device matches", self.text("#devices"))
            # By the schema version devices last spoke: the four that synced, and from the
            # overview's count of that version.
            version = json.load(urllib.request.urlopen(fleet.url + "/schema"))["version"]
            self.driver.get(fleet.url + f"/admin/devices?version={version}")
            self.assertEqual({row.get_attribute("data-name") for row in self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")},
                             {"tablet 01", "tablet 02", "tablet 03", "tablet 04"})
            self.assertEqual(self.driver.find_element(By.CSS_SELECTOR, "#filter-version option:checked").text, f"v{version}")
            self.driver.get(fleet.url + "/admin")
            self.driver.find_element(By.CSS_SELECTOR, "#schema-versions a").click()
            self.wait_for(lambda: f"version={version}" in self.driver.current_url)
            self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")), 4)
            # Past 50 devices the list is paged: 50 at once, the rest on the next page, the
            # filter and the sort kept.
            for index in range(50, 60):
                fleet.token(f"tablet {index:02d}")
            self.driver.get(fleet.url + "/admin/devices?sort=name&order=asc")
            self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")), 50)
            self.assertIn("60 devices, showing 1–50 of 60", self.text("#shown"))
            self.driver.find_element(By.ID, "next-page").click()
            self.wait_for(lambda: "page=2" in self.driver.current_url)
            second = [row.get_attribute("data-name") for row in self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")]
            self.assertEqual(len(second), 10)
            self.assertEqual(second[-1], "tablet 59")
            self.assertIn("showing 51–60 of 60", self.text("#shown"))
            self.assert_fits("devices-page-2")
            self.driver.get(fleet.url + "/admin/devices?name=tablet%205&page=2")
            self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")), 10, "one page: the last one is shown")
            # On an iPad every card has its fields in the same places.
            self.driver.get(fleet.url + "/admin/devices")
            self.assert_fits("devices-fleet", docs=True)
            self.driver.set_window_size(*IPAD)
            columns = self.driver.execute_script(
                """
                const places = {};
                for (const cell of document.querySelectorAll('#devices tbody td[data-label]')) {
                  if (!cell.dataset.label) continue;
                  (places[cell.dataset.label] = places[cell.dataset.label] || new Set()).add(Math.round(cell.getBoundingClientRect().left));
                }
                return Object.fromEntries(Object.entries(places).map(([label, set]) => [label, [...set]]));
                """)
            self.driver.set_window_size(*LAPTOP)
            for label, lefts in columns.items():
                self.assertEqual(len(lefts), 1, f"{label} is at {lefts} in different cards")
        finally:
            self.driver.delete_all_cookies()
            fleet.stop()

    def test_the_user_column_names_the_user(self):
        club = Server("--schema", "club")
        try:
            admin = Device(club, "club admin", token=club.admin_token)
            admin.run("create", "users", "first_name=Ann", "last_name=Coach")
            admin.sync()
            club.token("ann's tablet", role="coach", user=1)
            self.driver.delete_all_cookies()
            self.driver.get(club.url + "/admin/login")
            self.driver.find_element(By.ID, "token").send_keys(club.admin_token)
            self.submit("sign-in")
            self.driver.get(club.url + "/admin/devices")
            row = [r for r in self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr") if r.get_attribute("data-name") == "ann's tablet"][0]
            self.assertIn("Ann Coach", row.text)
        finally:
            club.stop()

    def test_an_idle_session_ends_with_the_tab_open_and_the_page_says_so(self):
        idle = Server("--console-idle-minutes", "1")
        try:
            self.driver.get(idle.url + "/admin/login")
            self.driver.find_element(By.ID, "token").send_keys(idle.admin_token)
            self.submit("sign-in")
            self.driver.get(idle.url + "/admin/devices")
            # The page refreshes itself every 5 s; a minute without a person's request ends the session.
            idle.execute("UPDATE _rs_console_sessions SET last_used = last_used - 120")
            self.wait_for(lambda: "/admin/login" in self.driver.current_url, timeout=30,
                          message="the session did not end with the tab open")
            self.assertIn("Your session ended after 1 minute without activity", self.text("#notice"))
        finally:
            self.driver.delete_all_cookies()
            idle.stop()


if __name__ == "__main__":
    unittest.main()
