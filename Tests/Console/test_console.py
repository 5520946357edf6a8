"""The operator's console in a real browser: headless Chromium driven by Selenium, against a
real revsync-server (SQLite, ephemeral port) and real devices (the revsync CLI).

Run by scripts/test (scripts/console-tests); alone:

    python3 -m venv .build/console-venv && .build/console-venv/bin/pip install selenium
    swift build && .build/console-venv/bin/python -m unittest discover -s Tests/Console -v

Each test saves a screenshot in .build/console-screenshots/ (REVSYNC_SCREENSHOTS to change).
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("REVSYNC_BIN") or subprocess.run(
    ["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True, check=True
).stdout.strip()
SCREENSHOTS = os.environ.get("REVSYNC_SCREENSHOTS", os.path.join(ROOT, ".build", "console-screenshots"))


def chromium_driver():
    options = Options()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"]:
        options.add_argument(argument)
    binary = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if binary:
        options.binary_location = binary
    driver_path = shutil.which("chromedriver") or "/usr/lib/chromium/chromedriver"
    return webdriver.Chrome(options=options, service=Service(executable_path=driver_path))


class Server:
    """A revsync-server process on a scratch SQLite database."""

    def __init__(self, *arguments):
        self.directory = tempfile.mkdtemp(prefix="revsync-console-")
        self.database = os.path.join(self.directory, "team.sqlite")
        token_file = os.path.join(self.directory, "admin-token")
        self.process = subprocess.Popen(
            [os.path.join(BIN, "revsync-server"), "--port", "0", "--database", self.database,
             "--admin-token-file", token_file, "--log-level", "warning", *arguments],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.process.stdout.readline()
        while "listening on" not in line:
            if not line:
                raise RuntimeError("revsync-server did not start")
            line = self.process.stdout.readline()
        self.url = re.search(r"http://127\.0\.0\.1:\d+", line).group(0)
        with open(token_file) as file:
            self.admin_token = file.read().strip()

    def token(self, name, role="member"):
        result = subprocess.run(
            [os.path.join(BIN, "revsync-server"), "token", "create", "--database", self.database, "--name", name, "--role", role],
            capture_output=True, text=True, check=True)
        return result.stdout.strip()

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.process.stdout.close()
        shutil.rmtree(self.directory, ignore_errors=True)


class Device:
    """A device: a store file driven by the revsync CLI."""

    def __init__(self, server, name, token=None):
        self.server = server
        self.store = os.path.join(server.directory, name + ".sqlite")
        self.token = token or server.token(name)
        self.run("init", "--server", server.url, token=self.token)

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

    def behind(self, name):
        row = self.device_row(name)
        self.assertIsNotNone(row, f"{name} is not listed")
        return int(row.find_element(By.CSS_SELECTOR, "td.behind").text)

    def row_text(self, name, expected):
        """The device's row once it shows `expected` (what devices do is written once a second)."""
        return self.wait_for(lambda: expected in self.device_row(name).text and self.device_row(name).text,
                             message=f"{name}'s row never showed {expected}")

    # Tests

    def test_sign_in_is_refused_for_a_wrong_token_and_a_member_token(self):
        self.open("/admin")
        self.assertTrue(self.driver.current_url.endswith("/admin/login"))
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

    def test_the_overview_and_history_pages(self):
        gina = Device(self.server, "gina")
        gina.run("create", "teams", "name=History")
        gina.sync()
        self.sign_in_as_admin()
        self.assertEqual(self.driver.find_element(By.ID, "revision").text, json.load(
            urllib.request.urlopen(self.server.url + "/health"))["maxRevision"].__str__())
        self.assertTrue(self.driver.find_element(By.CSS_SELECTOR, ".chart svg").is_displayed())
        self.assertIn("gina", self.driver.find_element(By.ID, "currency-current").text)
        self.driver.save_screenshot(os.path.join(SCREENSHOTS, "overview-laptop.png"))
        self.driver.set_window_size(820, 1180)  # an iPad, upright
        self.driver.save_screenshot(os.path.join(SCREENSHOTS, "overview-ipad.png"))
        self.driver.set_window_size(1280, 1000)
        listed = gina.run("list", "teams").stdout
        team = [line.split("\t")[0] for line in listed.splitlines() if "History" in line][0]
        self.open(f"/admin/history?entity=teams&id={team}")
        self.assertIn("create", self.driver.find_element(By.ID, "history").text)
        self.assertIn("gina", self.driver.find_element(By.ID, "history").text)


if __name__ == "__main__":
    unittest.main()
