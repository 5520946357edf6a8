"""The HTTP API against its published contract: schemathesis generates requests from
docs/openapi.json (as the server serves it at GET /openapi.json) and checks every answer against
it, on a real revsync-server over SQLite (the demo schema) and over PostgreSQL (the club schema,
with roles and permission rules), authenticated as each role.

Run by scripts/test (scripts/contract-tests); alone:

    python3 -m venv .build/contract-venv && .build/contract-venv/bin/pip install 'schemathesis>=4.32,<5' 'openapi-spec-validator>=0.7,<1'
    swift build && .build/contract-venv/bin/python -m unittest discover -s Tests/Contract -v

PostgreSQL runs when REVSYNC_POSTGRES_URL names a server (scripts/test starts one) and
POSTGRES_BINDIR holds its createdb (without it, the club schema's run is skipped too); REVSYNC_REQUIRE_POSTGRES=1 makes its absence a failure, and
REVSYNC_REQUIRE_CONTRACT=1 (as in CI) makes a missing schemathesis one.
REVSYNC_CONTRACT_EXAMPLES sets the examples per operation (default 60). Each run's report is in
.build/contract-reports/.

The checks: no answer is a 5xx; every answer's status, content type, headers and body conform
to the document; and after every run the server still answers GET /health and logged no failed
request.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("REVSYNC_BIN") or subprocess.run(
    ["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True, check=True
).stdout.strip()
SCHEMATHESIS = os.path.join(ROOT, ".build", "contract-venv", "bin", "schemathesis")
REPORTS = os.path.join(ROOT, ".build", "contract-reports")
EXAMPLES = os.environ.get("REVSYNC_CONTRACT_EXAMPLES", "60")
# The stateful runs' scenarios: with 60, which links a seed's scenarios reach depends on what the
# document holds (a new header changes what hypothesis draws), and one seed reached a single link.
STATEFUL_EXAMPLES = os.environ.get("REVSYNC_CONTRACT_STATEFUL_EXAMPLES", "200")
CHECKS = ",".join([
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
])
METRICS_TOKEN = "contract-metrics-" + uuid.uuid4().hex
# The seeds of the runs: the admin's runs once per seed (the second is the independent run's
# that found a 500), the other roles' with the first.
SEEDS = os.environ.get("REVSYNC_CONTRACT_SEEDS", "45 20261126").split()


class Server:
    """A revsync-server process on a scratch database, seeded, with a token of every role."""

    def __init__(self, database, directory, schema="demo"):
        self.database = database
        self.directory = directory
        self.log_path = os.path.join(directory, "server.log")
        subprocess.run([os.path.join(BIN, "revsync-server"), "seed", "--database", database, "--schema", schema, "--records", "300",
                        "--create"], check=True, capture_output=True, text=True)
        self.tokens = {role: self.token(role + "-device", role) for role in ("admin", "member", "viewer")}
        # Failures to authenticate are the point of the run without a token: the limits that hold
        # guessing back are raised so that every request of that run reaches its operation. The
        # server logs to a file: a pipe nobody reads would fill, and stop the server.
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [os.path.join(BIN, "revsync-server"), "--port", "0", "--database", database, "--schema", schema,
                 "--metrics-token", METRICS_TOKEN,
                 "--auth-failure-limit", "1000000", "--auth-failure-global-limit", "1000000"],
                stdout=log, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 120
        while True:
            with open(self.log_path) as file:
                found = re.search(r"RevSync server listening on (http://127\.0\.0\.1:\d+)", file.read())
            if found:
                self.url = found.group(1)
                break
            if self.process.poll() is not None or time.monotonic() > deadline:
                with open(self.log_path) as file:
                    raise RuntimeError("revsync-server did not start:\n" + file.read())
            time.sleep(0.1)

    def token(self, name, role):
        command = [os.path.join(BIN, "revsync-server"), "token", "create", "--database", self.database, "--name", name, "--role", role]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        with open(self.log_path) as file:
            return file.read()


class ContractTests:
    """The runs, on one store (the subclasses below)."""

    store = None
    schema = "demo"

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(SCHEMATHESIS):
            if os.environ.get("REVSYNC_REQUIRE_CONTRACT") == "1":
                raise AssertionError("schemathesis is not installed (REVSYNC_REQUIRE_CONTRACT=1): run scripts/contract-tests")
            raise unittest.SkipTest("schemathesis is not installed: run scripts/contract-tests")
        cls.directory = tempfile.mkdtemp(prefix="revsync-contract-")
        cls.server = Server(cls.database(), cls.directory, cls.schema)
        os.makedirs(REPORTS, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        log = cls.server.stop()
        with open(os.path.join(REPORTS, cls.store + "-server.log"), "w") as file:
            file.write(log)
        shutil.rmtree(cls.directory, ignore_errors=True)

    def run_schemathesis(self, name, token, *arguments, seed=None):
        """One schemathesis run against the server's own document; fails with its report."""
        command = [
            SCHEMATHESIS, "run", self.server.url + "/openapi.json",
            "--checks", CHECKS, "--max-examples", EXAMPLES, "--request-timeout", "30", "--workers", "1",
            "--seed", seed or SEEDS[0], "--no-color", *arguments,
        ]
        if token is not None:
            command += ["--header", "Authorization: Bearer " + token]
        result = subprocess.run(command, capture_output=True, text=True, cwd=self.directory, env={**os.environ, "SCHEMATHESIS_TELEMETRY": "false"})
        report = result.stdout + result.stderr
        with open(os.path.join(REPORTS, f"{self.store}-{name}-{seed or SEEDS[0]}.txt"), "w") as file:
            file.write(report)
        self.assertEqual(result.returncode, 0, f"schemathesis found answers that break the contract ({self.store}, {name}):\n{report[-6000:]}")
        self.assertRegex(report, r"Tested: \d+", report[-2000:])
        self.assert_up()
        return report

    def assert_up(self):
        """The server still answers, and logged no request that failed inside it."""
        self.assertIsNone(self.server.process.poll(), "the server exited")
        with urllib.request.urlopen(self.server.url + "/health", timeout=10) as response:
            self.assertEqual(json.load(response)["status"], "ok")
        with open(self.server.log_path) as file:
            self.assertNotIn("request failed", file.read())

    def test_0_the_document_is_valid_openapi_3_1(self):
        """The served document passes openapi-spec-validator's OpenAPI 3.1 checks (schemathesis
        reads documents leniently)."""
        from openapi_spec_validator import validate
        with urllib.request.urlopen(self.server.url + "/openapi.json", timeout=10) as response:
            document = json.load(response)
        self.assertEqual(document["openapi"], "3.1.0")
        validate(document)

    # The stream of GET /events never ends by design: the runs with a token leave it out (the
    # Swift tests cover it); the run without one reaches it, as its answers end (401).
    # `POST /wipe-receipt` with `"reason": "leaseExpired"` revokes the very token that sends it
    # (a device past its offline lease): the runs with a token leave it to test_6, which runs last.
    def test_1_member(self):
        self.run_schemathesis("member", self.server.tokens["member"], "--exclude-path", "/events", "--exclude-path", "/wipe-receipt")

    def test_2_viewer(self):
        self.run_schemathesis("viewer", self.server.tokens["viewer"], "--exclude-path", "/events", "--exclude-path", "/wipe-receipt")

    def test_3_admin(self):
        # One run per seed, on the state the earlier runs left: what the member's and the
        # admin's fuzzed change sets committed is what the later runs' history, revert and
        # erase requests meet.
        for seed in SEEDS:
            with self.subTest(seed=seed):
                report = self.run_schemathesis(
                    "admin", self.server.tokens["admin"], "--exclude-path", "/events", "--exclude-path", "/admin/api/revoke",
                    "--exclude-path", "/wipe-receipt", "--phases", "examples,coverage,fuzzing", seed=seed)
                # Every operation was reached (16 of the 19: not the stream, and not revoke and
                # the wipe receipt, which revoke the runs' own tokens: test_6 runs them last).
                self.assertIn("Tested: 16", report)

    def test_3b_admin_on_its_own_state(self):
        """Stateful runs: schemathesis follows the document's links from what its own requests
        made (a sync's change set to its revert, a revert to its requester's history and to the
        revert's revert, a history page to a revert, an erasure to the record's history), once
        per seed, on the state the earlier runs left."""
        for seed in SEEDS:
            with self.subTest(seed=seed):
                report = self.run_schemathesis(
                    "admin-stateful", self.server.tokens["admin"], "--exclude-path", "/events", "--exclude-path",
                    "/admin/api/revoke", "--exclude-path", "/wipe-receipt", "--phases", "stateful", "--max-examples", STATEFUL_EXAMPLES,
                    seed=seed)
                covered = re.search(r"API Links:\s+(\d+) covered", report)
                self.assertIsNotNone(covered, report[-2000:])
                self.assertGreaterEqual(int(covered.group(1)), 2, report[-2000:])

    def test_4_without_token(self):
        # Without a token an operation that needs one answers 401 before it reads the request
        # (the others, the health check and the document, take no input), so more examples only
        # repeat one path: ten per operation, and the coverage phase's edge cases. All 19 reached.
        report = self.run_schemathesis("no-token", None, "--max-examples", "10")
        self.assertIn("Tested: 19", report)

    def test_6_revoke_and_wipe_receipt_last(self):
        """`POST /admin/api/revoke` revokes (and may order wiped) the very tokens the other runs
        use, so it runs last, with the wiped device's `POST /wipe-receipt`."""
        self.run_schemathesis(
            "revoke", self.server.tokens["admin"], "--include-path", "/admin/api/revoke", "--include-path", "/wipe-receipt",
            "--phases", "examples,coverage,fuzzing")

    def test_5_metrics(self):
        self.run_schemathesis("metrics", METRICS_TOKEN, "--include-path", "/metrics", "--phases", "examples,coverage,fuzzing")


class SQLiteContractTests(ContractTests, unittest.TestCase):
    store = "sqlite"

    @classmethod
    def database(cls):
        return os.path.join(cls.directory, "contract.sqlite")


class PostgreSQLContractTests(ContractTests, unittest.TestCase):
    """The club schema (roles and permission rules, attribute-level conflicts) on PostgreSQL:
    each store once and each schema once, in two runs that go at once on two cores."""
    store = "postgres-club"
    schema = "club"

    @classmethod
    def setUpClass(cls):
        if not os.environ.get("REVSYNC_POSTGRES_URL"):
            if os.environ.get("REVSYNC_REQUIRE_POSTGRES") == "1":
                raise RuntimeError("REVSYNC_POSTGRES_URL is not set and PostgreSQL is required")
            raise unittest.SkipTest("REVSYNC_POSTGRES_URL is not set")
        super().setUpClass()

    @classmethod
    def database(cls):
        server = urllib.parse.urlsplit(os.environ["REVSYNC_POSTGRES_URL"])
        name = "contract_" + uuid.uuid4().hex[:16]
        createdb = os.path.join(os.environ.get("POSTGRES_BINDIR", ""), "createdb")
        subprocess.run([createdb if os.path.exists(createdb) else "createdb", "-h", server.hostname, "-p", str(server.port),
                        "-U", server.username or "revsync", name], check=True, capture_output=True, text=True)
        return urllib.parse.urlunsplit(server._replace(path="/" + name))


if __name__ == "__main__":
    unittest.main()
