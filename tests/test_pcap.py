"""`record.pcap`: a simulated run's captures read back, packet by packet, against its
packet log (`packets.parquet`): the same departures at the same instants, with the
flow's addresses, ports, byte sequence numbers and ECN field. Read by a parser of
the libpcap format written here from its specification (pcap-savefile(5)), and by
tshark when it is installed."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

import aqmlab

SCENARIO = """
name = "pcap"
duration = "4s"
seed = 3

[bottleneck]
rate = "10Mbps"
delay = "10ms"
buffer = "20pkts"
aqm = { kind = "codel", ecn = true }

[[flows]]
name = "bulk"
count = 3
start = { uniform = ["0s", "0.5s"] }
tcp = { ecn = true, handshake = true }

[[flows]]
name = "voip"
kind = "cbr"
rate = "200kbps"
packet_size = "200B"

[record]
links = ["bottleneck", "bottleneck_rev"]
pcap = true
"""


def read_pcap(path: Path) -> tuple[int, list[tuple[int, int, bytes]]]:
    """(link type, [(time ns, original length, captured bytes)]) of a libpcap file
    with nanosecond timestamps, in either byte order."""
    data = path.read_bytes()
    magic = data[:4]
    assert magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"), magic
    e = "<" if magic == b"\x4d\x3c\xb2\xa1" else ">"
    major, minor, _, _, snaplen, linktype = struct.unpack(e + "HHiIII", data[4:24])
    assert (major, minor) == (2, 4)
    out, i = [], 24
    while i < len(data):
        sec, nsec, incl, orig = struct.unpack(e + "IIII", data[i : i + 16])
        assert incl <= orig and incl <= snaplen and nsec < 1_000_000_000
        out.append((sec * 1_000_000_000 + nsec, orig, data[i + 16 : i + 16 + incl]))
        i += 16 + incl
    assert i == len(data)
    return linktype, out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("pcap")
    (d / "s.toml").write_text(SCENARIO)
    r = aqmlab.run(str(d / "s.toml"))
    out = r.write(d / "run", report=False)
    return r, out


def test_each_captured_link_has_its_file_in_the_run_folder(run):
    r, out = run
    names = sorted(p.name for p in out.glob("*.pcap"))
    assert names == ["packets.bottleneck.pcap", "packets.bottleneck_rev.pcap"]
    assert aqmlab.load(out).summary == r.summary  # a run folder with captures reads as one


@pytest.mark.parametrize("link", ["bottleneck", "bottleneck_rev"])
def test_the_capture_is_the_packet_log_s_departures(run, link):
    r, out = run
    linktype, recs = read_pcap(out / f"packets.{link}.pcap")
    assert linktype == 101  # LINKTYPE_RAW: IPv4 from the first byte
    pk = r.raw["packets"]
    li = r.meta["logged_links"].index(link)
    dep = (pk["link"] == li) & (pk["event"] == 1)
    assert dep.sum() > 500
    # one record per departure, at its instant, in order
    assert len(recs) == dep.sum()
    assert [t for t, _, _ in recs] == pk["time_ns"][dep].tolist()
    # the IPv4 identification is the packet's uid (16 bits); the length its size,
    # save the SACK blocks' option bytes of ACKs
    ip_id = np.array([struct.unpack(">H", b[4:6])[0] for _, _, b in recs])
    assert (ip_id == (pk["uid"][dep] & 0xFFFF)).all()
    orig = np.array([o for _, o, _ in recs])
    tcp_opts = np.array([(b[32] >> 4) * 4 - 20 if b[9] == 6 else 0 for _, _, b in recs])
    assert (orig - tcp_opts == pk["size"][dep]).all()
    # every header checksum verifies (RFC 1071)
    for _, _, b in recs[:200]:
        words = struct.unpack(">10H", b[:20])
        s = sum(words)
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        assert s == 0xFFFF


def test_flows_ports_sequence_numbers_and_ce_marks(run):
    r, out = run
    _, recs = read_pcap(out / "packets.bottleneck.pcap")
    pk = r.raw["packets"]
    li = r.meta["logged_links"].index("bottleneck")
    dep = (pk["link"] == li) & (pk["event"] == 1)
    flows = pk["flow"][dep]
    kinds = pk["kind"][dep]
    # data sender ports 1024 + flow (one connection each), receivers on 5201 / 5004
    sport = np.array([struct.unpack(">H", b[20:22])[0] for _, _, b in recs])
    dport = np.array([struct.unpack(">H", b[22:24])[0] for _, _, b in recs])
    assert (sport == 1024 + flows).all()
    proto = np.array([b[9] for _, _, b in recs])
    assert ((proto == 17) == (flows == 3)).all()  # the CBR flow is UDP
    assert set(dport[proto == 6]) == {5201} and set(dport[proto == 17]) == {5004}
    # the handshake: each TCP flow's SYN comes first, with ECN set-up flags (ECE + CWR)
    syn = kinds == 2
    assert syn.sum() == 3
    flags = np.array([b[33] if b[9] == 6 else 0 for _, _, b in recs])
    assert (flags[syn] == 0xC2).all()
    # data: byte sequence numbers 1 + segment x 1460 (MSS) and the payload as length
    data = (kinds == 0) & (proto == 6)
    seq = np.array([struct.unpack(">I", b[24:28])[0] for _, _, b in recs])
    first = {f: seq[data & (flows == f)].min() for f in range(3)}
    assert set(first.values()) == {1}
    assert ((seq[data] - 1) % 1460 == 0).all()
    # CE: the IPv4 ECN field of exactly the packets CoDel marked on this link
    ce = np.array([b[1] & 3 == 3 for _, _, b in recs])
    marked = set(pk["uid"][(pk["link"] == li) & (pk["event"] == 3)].tolist())
    assert marked and set(pk["uid"][dep][ce].tolist()) == marked
    # ECT(0) otherwise, but retransmissions, sent Not-ECT (RFC 3168 §6.1.5): no more
    # Not-ECT data segments than the senders retransmitted (none if they did not)
    ect = np.array([b[1] & 3 for _, _, b in recs])[data & ~ce]
    retransmitted = int(np.sum(np.asarray(r.raw["flows"]["retransmits"])[:3]))
    assert retransmitted > 0  # the 20-packet buffer overflows now and then
    assert set(ect.tolist()) == {0, 2} and (ect == 2).mean() > 0.9
    assert (ect == 0).sum() <= retransmitted


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_tshark_reads_the_capture_as_tcp_and_udp_streams(run):
    r, out = run
    f = out / "packets.bottleneck.pcap"
    p = subprocess.run(["tshark", "-r", str(f), "-T", "fields", "-e", "frame.time_epoch", "-e", "tcp.stream", "-e", "udp.stream", "-e", "ip.dsfield.ecn"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rows = [line.split("\t") for line in p.stdout.splitlines()]
    _, recs = read_pcap(f)
    assert len(rows) == len(recs)
    assert {x[1] for x in rows if x[1]} == {"0", "1", "2"}  # three TCP connections
    assert {x[2] for x in rows if x[2]} == {"0"}  # one UDP flow
    assert abs(float(rows[-1][0]) - recs[-1][0] / 1e9) < 1e-6


def test_captures_of_named_links_leave_the_run_itself_unchanged(tmp_path):
    # a captured link runs packet by packet: the results are those of the run without it
    (tmp_path / "s.toml").write_text(SCENARIO.replace("pcap = true", 'pcap = ["bottleneck_rev"]'))
    a = aqmlab.run(str(tmp_path / "s.toml"))
    (tmp_path / "t.toml").write_text(SCENARIO.replace("pcap = true", ""))
    b = aqmlab.run(str(tmp_path / "t.toml"))
    assert list(a.raw["files"]) == ["packets.pcap"]
    for t in ("packets", "flows", "link_series"):
        for c, v in b.raw[t].items():
            assert np.array_equal(a.raw[t][c], v, equal_nan=v.dtype.kind == "f"), (t, c)
