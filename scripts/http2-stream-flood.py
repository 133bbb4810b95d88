#!/usr/bin/env python3
"""A hostile HTTP/2 client of pathprofd's Unix socket: one connection, many streams that send
their headers and never their request, then holds the connection.

It speaks the frames itself (no HTTP/2 library): the connection preface, SETTINGS (acknowledged
or, with --no-ack, never), then HEADERS frames for odd stream ids without END_STREAM and never
a DATA frame. It prints "sent N" once the streams are sent, then one JSON object: the server's SETTINGS (max_concurrent_streams is null
where the server announced none), the streams sent, whether and when the server closed the
connection (a GOAWAY's error code and text, or the end of the stream), and the RST_STREAM count.

Used by tests/daemon/hostile_http2_test.cc and scripts/measure-stream-flood.sh.
"""
import argparse
import json
import os
import select
import socket
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0, 1, 3, 4, 6, 7
END_HEADERS, ACK = 0x4, 0x1
SETTINGS_MAX_CONCURRENT_STREAMS = 3


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(
        ">I", stream & 0x7FFFFFFF) + payload


def hpack_string(s):
    b = s.encode()
    assert len(b) < 127
    return bytes([len(b)]) + b


def request_headers(path):
    # Static-table entries where HPACK has them; literals without indexing otherwise, so every
    # block stands alone (no dynamic table state to keep in step).
    return (b"\x83"  # :method POST
            + b"\x86"  # :scheme http
            + b"\x04" + hpack_string(path)  # :path, name indexed (4)
            + b"\x01" + hpack_string("localhost")  # :authority, name indexed (1)
            + b"\x0f\x10" + hpack_string("application/grpc")  # content-type (31)
            + b"\x00" + hpack_string("te") + hpack_string("trailers"))


class Connection:
    def __init__(self, path, ack):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.ack = ack
        self.buf = b""
        self.settings = {}
        self.settings_seen = False
        self.rst = 0
        self.goaway = None
        self.closed_at = None
        self.start = time.monotonic()

    def send(self, data):
        if self.closed_at is not None:
            return False
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.mark_closed()
            return False

    def mark_closed(self):
        if self.closed_at is None:
            self.closed_at = time.monotonic() - self.start

    def drain(self, timeout):
        """Reads what the server sent within `timeout` seconds (0: what is there now)."""
        end = time.monotonic() + timeout
        while self.closed_at is None:
            left = max(0.0, end - time.monotonic())
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.mark_closed()
                return
            self.buf += chunk
            self.parse()

    def parse(self):
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[:3], "big")
            if len(self.buf) < 9 + length:
                return
            kind, flags = self.buf[3], self.buf[4]
            payload = self.buf[9:9 + length]
            self.buf = self.buf[9 + length:]
            if kind == SETTINGS and not flags & ACK:
                for i in range(0, len(payload) - 5, 6):
                    ident, value = struct.unpack(">HI", payload[i:i + 6])
                    self.settings[ident] = value
                self.settings_seen = True
                if self.ack:
                    self.send(frame(SETTINGS, ACK, 0))
            elif kind == PING and not flags & ACK:
                self.send(frame(PING, ACK, 0, payload))
            elif kind == RST_STREAM:
                self.rst += 1
            elif kind == GOAWAY and len(payload) >= 8:
                last, code = struct.unpack(">II", payload[:8])
                self.goaway = {"last_stream": last & 0x7FFFFFFF, "error_code": code,
                               "text": payload[8:].decode(errors="replace")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("socket")
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--no-ack", action="store_true", help="never acknowledge the server's SETTINGS")
    ap.add_argument("--hold", type=float, default=0, help="seconds to hold the connection after")
    ap.add_argument("--batch", type=int, default=200, help="HEADERS frames per write")
    ap.add_argument("--path", default="/pathprof.v1.PathProfiler/GetStats")
    args = ap.parse_args()

    c = Connection(args.socket, not args.no_ack)
    c.send(PREFACE + frame(SETTINGS, 0, 0))
    settings_by = time.monotonic() + 5
    while not c.settings_seen and c.closed_at is None and time.monotonic() < settings_by:
        c.drain(0.01)
    block = request_headers(args.path)
    sent = 0
    stream = 1
    while sent < args.streams and c.closed_at is None:
        n = min(args.batch, args.streams - sent)
        data = b"".join(frame(HEADERS, END_HEADERS, stream + 2 * i, block) for i in range(n))
        if not c.send(data):
            break
        stream += 2 * n
        sent += n
        c.drain(0)
    c.drain(0.2)
    sent_s = time.monotonic() - c.start
    print("sent %d" % sent, flush=True)  # a line of its own, before the report
    if args.hold > 0:
        c.drain(args.hold)
    out = {
        "pid": os.getpid(),
        "settings_seen": c.settings_seen,
        "max_concurrent_streams": c.settings.get(SETTINGS_MAX_CONCURRENT_STREAMS),
        "streams_sent": sent,
        "sent_s": round(sent_s, 3),
        "closed_by_server": c.closed_at is not None,
        "closed_after_s": None if c.closed_at is None else round(c.closed_at, 3),
        "goaway": c.goaway,
        "rst_streams": c.rst,
    }
    print(json.dumps(out), flush=True)
    c.sock.close()


if __name__ == "__main__":
    sys.exit(main())
