"""An S3 API on loopback for the tests and benchmarks: moto's S3, served by werkzeug in a thread.

moto answers a conditional PUT (``If-None-Match: *``) with 412 when the key exists, but checks and
writes in two steps, so two racing PUTs can both win; one lock around the whole application makes
each request atomic, as S3 is for a single key. The server counts requests by kind (LIST, GET,
HEAD, PUT, POST, DELETE) and can be told to fail requests that match a rule, before or after
moto handles them, which is how the tests lose responses and throttle writers.
"""
import collections
import dataclasses
import logging
import re
import threading
import time
import urllib.parse

import werkzeug.serving
from moto.server import DomainDispatcherApplication, create_backend_app

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"


@dataclasses.dataclass
class Fault:
    """Fail the next `times` requests whose method is `method` and whose key matches `key`.

    With ``after=True`` moto handles the request first (its write lands) and the client gets the
    error instead of moto's answer: a lost response. `status` 503 with code SlowDown is S3's
    throttling; 500 InternalError its transient failure.
    """
    method: str
    key: str
    status: int = 500
    code: str = "InternalError"
    after: bool = False
    times: int = 1
    hits: int = 0

    def matches(self, method, key):
        return self.hits < self.times and method == self.method and re.search(self.key, key) is not None


class S3Server:
    def __init__(self, latency_ms=0):
        """`latency_ms`: how long each request waits before it is served, as a store's first byte
        does (requests wait side by side; moto then serves them one at a time)."""
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
        self.latency = latency_ms / 1000
        self._app = DomainDispatcherApplication(create_backend_app)
        self._lock = threading.Lock()
        self._faults = []
        self.counts = collections.Counter()
        self.log = []  # (kind, key) of every request, in order
        self._server = werkzeug.serving.make_server("127.0.0.1", 0, self._wsgi, threaded=True)
        self.port = self._server.server_port
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="s3-server", daemon=True)
        self._thread.start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()

    # ---- requests ----

    @staticmethod
    def _kind(method, path, query):
        if method == "GET":
            parts = [p for p in path.split("/") if p]
            # Path-style: /bucket is the bucket (a listing), /bucket/key an object.
            return "LIST" if len(parts) <= 1 or "list-type" in query or "prefix" in query else "GET"
        return method

    def _wsgi(self, environ, start_response):
        method = environ["REQUEST_METHOD"]
        path = urllib.parse.unquote(environ.get("PATH_INFO", ""))
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        kind = self._kind(method, path, query)
        if self.latency:
            time.sleep(self.latency)
        with self._lock:
            self.counts[kind] += 1
            self.log.append((kind, path))
            fault = next((f for f in self._faults if f.matches(method, path)), None)
            if fault is not None:
                fault.hits += 1
            if fault is not None and not fault.after:
                return self._error(fault, start_response)
            captured = {}

            def capture(status, headers, exc_info=None):
                captured["status"], captured["headers"] = status, headers
                return lambda _: None
            body = b"".join(self._app(environ, capture))
            if fault is not None:
                return self._error(fault, start_response)
            start_response(captured["status"], captured["headers"])
            return [body]

    @staticmethod
    def _error(fault, start_response):
        body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{fault.code}</Code>'
                f"<Message>injected by the test</Message></Error>").encode()
        start_response(f"{fault.status} Injected", [("Content-Type", "application/xml"),
                                                    ("Content-Length", str(len(body)))])
        return [body]

    # ---- control ----

    def inject(self, fault):
        """Adds `fault`; returns it (its `hits` says how often it fired)."""
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self):
        with self._lock:
            self._faults.clear()

    def reset_counts(self):
        with self._lock:
            self.counts.clear()
            self.log.clear()

    def snapshot_counts(self):
        with self._lock:
            return dict(self.counts)

    def create_bucket(self, name):
        import boto3
        self.client().create_bucket(Bucket=name)

    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    # ---- settings for the two clients ----

    def hadoop_conf(self):
        """S3A settings for this server (keys without the ``spark.hadoop.`` prefix)."""
        return {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.endpoint.region": REGION,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "fs.s3a.access.key": ACCESS_KEY,
            "fs.s3a.secret.key": SECRET_KEY,
        }

    def storage_options(self):
        """pylance's storage options for this server."""
        return {"aws_endpoint": self.endpoint, "aws_access_key_id": ACCESS_KEY,
                "aws_secret_access_key": SECRET_KEY, "aws_region": REGION, "allow_http": "true"}
