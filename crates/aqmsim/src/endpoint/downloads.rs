//! Download clients: `files`, `web` and `transfer`. A client requests a file of a
//! size drawn from the group's distribution, receives it, thinks for a time drawn
//! from the think-time distribution, and requests the next (Kuhn & Ros §IV-A; Jou,
//! Tan & Baras §II); a `transfer` is a single download (Popovsky §3). The request
//! reaches the server at once: as in ns-2's one-way TCP agents, the request's own
//! trip on the return path is not simulated; the download time runs from the
//! request (including the SYN / SYN-ACK exchange when `tcp.handshake` is on) to the
//! delivery of the last byte at the client.

use aqm::{Bytes, Duration, Time};
use serde::{Deserialize, Serialize, Serializer};

use super::tcp_flow::TcpFlow;
use super::{AppEvent, Cx, Endpoint, FlowSetup, TrafficKind};
use crate::dist::{ParetoSize, SizeDist, TimeDist};
use crate::packet::Packet;
use crate::record::{FlowSeries, FlowTable};
use crate::rng::SimRng;
use crate::tcp::TcpConfig;

/// How repeated downloads use TCP connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Connection {
    /// A new connection per download (its own handshake when `tcp.handshake` is on,
    /// a fresh congestion window).
    #[default]
    New,
    /// One connection per client, reused (HTTP/1.1 persistent connections): the
    /// window carries over, subject to `tcp.slow_start_after_idle`.
    Persistent,
}

/// Repeated downloads: a client asks for a file, receives it, thinks, asks again.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DownloadSpec {
    /// File sizes.
    pub sizes: SizeDist,
    /// Think time between the end of one download and the next request.
    pub think: TimeDist,
    pub connection: Connection,
    pub tcp: TcpConfig,
}

/// `files`: Kuhn & Ros §IV-A's small-file downloads by default.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilesIn {
    #[serde(default = "files_sizes")]
    sizes: SizeDist,
    #[serde(default = "files_think")]
    think: TimeDist,
    #[serde(default)]
    connection: Connection,
    #[serde(default)]
    tcp: TcpConfig,
}

/// Kuhn & Ros §IV-A: "files of S kB (S in {15; 44; 73; 102})".
fn files_sizes() -> SizeDist {
    SizeDist::Choice([15_000, 44_000, 73_000, 102_000].map(Bytes).to_vec())
}
/// Kuhn & Ros §IV-A: "an exponential law of mean 9.5 s".
fn files_think() -> TimeDist {
    TimeDist::Exponential(Duration::from_millis(9_500))
}

/// `web`: Jou, Tan & Baras §II's web clients by default.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebIn {
    #[serde(default = "web_sizes")]
    sizes: SizeDist,
    #[serde(default = "web_think")]
    think: TimeDist,
    #[serde(default = "persistent")]
    connection: Connection,
    #[serde(default)]
    tcp: TcpConfig,
}

/// Jou, Tan & Baras §II: "a Pareto file size distribution with parameters
/// (Kp = 2.3 Kbytes, alpha = 1.3) (mean 10 Kbytes)".
fn web_sizes() -> SizeDist {
    SizeDist::Pareto(ParetoSize { scale: Bytes(2_300), shape: 1.3, max: None })
}
/// Jou, Tan & Baras §II: "a think time of Exponential distribution with mean 50s".
fn web_think() -> TimeDist {
    TimeDist::Exponential(Duration::from_secs(50))
}
/// Jou, Tan & Baras §II: "running HTTP 1.1 protocol": persistent connections.
fn persistent() -> Connection {
    Connection::Persistent
}

/// `files`: repeated downloads, Kuhn & Ros §IV-A's defaults.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(from = "FilesIn")]
pub struct FilesSpec(pub DownloadSpec);

/// `web`: repeated downloads, Jou, Tan & Baras §II's defaults.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(from = "WebIn")]
pub struct WebSpec(pub DownloadSpec);

impl From<FilesIn> for FilesSpec {
    fn from(f: FilesIn) -> Self {
        FilesSpec(DownloadSpec { sizes: f.sizes, think: f.think, connection: f.connection, tcp: f.tcp })
    }
}
impl From<WebIn> for WebSpec {
    fn from(f: WebIn) -> Self {
        WebSpec(DownloadSpec { sizes: f.sizes, think: f.think, connection: f.connection, tcp: f.tcp })
    }
}
impl Serialize for FilesSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}
impl Serialize for WebSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// One TCP transfer of `size` bytes per flow, starting at the group's start time
/// (Popovsky §3: late-arriving connections of 3 KB to 18 MB).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferSpec {
    pub size: Bytes,
    #[serde(default)]
    pub tcp: TcpConfig,
}

impl DownloadSpec {
    fn client(&self, f: &FlowSetup<'_>) -> Client {
        Client {
            tcp: TcpFlow::new(f.flow, &self.tcp).seeded(f),
            cfg: self.tcp.clone(),
            sizes: Some(self.sizes.clone()),
            think: Some(self.think.clone()),
            rng: f.rng(),
            single: None,
            persistent: self.connection == Connection::Persistent,
            group: f.group_index,
            requested: 0,
            completed: 0,
            current: None,
            stop: f.stop,
        }
    }
    fn check(&self) -> Result<(), String> {
        self.sizes.validate().map_err(|m| match m.split_once(": ") {
            Some((field, _)) if !field.contains(' ') => format!("sizes.{m}"),
            _ => format!("sizes: {m}"),
        })
    }
}

impl TrafficKind for FilesSpec {
    const FAMILY: &'static str = "downloads";
    type Endpoint = Client;
    fn tcp(&self) -> Option<&TcpConfig> {
        Some(&self.0.tcp)
    }
    fn check(&self) -> Result<(), String> {
        self.0.check()
    }
    fn sizes(&self) -> Option<Vec<u64>> {
        self.0.sizes.support()
    }
    fn build(&self, f: &FlowSetup<'_>) -> Client {
        self.0.client(f)
    }
}

impl TrafficKind for WebSpec {
    const FAMILY: &'static str = "downloads";
    type Endpoint = Client;
    fn tcp(&self) -> Option<&TcpConfig> {
        Some(&self.0.tcp)
    }
    fn check(&self) -> Result<(), String> {
        self.0.check()
    }
    fn sizes(&self) -> Option<Vec<u64>> {
        self.0.sizes.support()
    }
    fn build(&self, f: &FlowSetup<'_>) -> Client {
        self.0.client(f)
    }
}

impl TrafficKind for TransferSpec {
    const FAMILY: &'static str = "downloads";
    type Endpoint = Client;
    fn tcp(&self) -> Option<&TcpConfig> {
        Some(&self.tcp)
    }
    fn check(&self) -> Result<(), String> {
        if self.size.0 == 0 {
            return Err("size: must be greater than zero".into());
        }
        Ok(())
    }
    fn sizes(&self) -> Option<Vec<u64>> {
        Some(vec![self.size.0])
    }
    fn build(&self, f: &FlowSetup<'_>) -> Client {
        Client {
            tcp: TcpFlow::new(f.flow, &self.tcp).seeded(f),
            cfg: self.tcp.clone(),
            sizes: None,
            think: None,
            rng: f.rng(),
            single: Some(self.size.0),
            persistent: false,
            group: f.group_index,
            requested: 0,
            completed: 0,
            current: None,
            stop: f.stop,
        }
    }
}

/// The download in progress.
#[derive(Clone, Copy, Debug)]
struct Current {
    /// Its row in the transfer log.
    row: usize,
    /// The sender's retransmission and timeout counters when it was requested.
    retx0: u64,
    rto0: u64,
}

/// A client that downloads files one after another (or a single transfer).
pub struct Client {
    tcp: TcpFlow,
    cfg: TcpConfig,
    sizes: Option<SizeDist>,
    think: Option<TimeDist>,
    rng: SimRng,
    /// `transfer`: this one size, once.
    single: Option<u64>,
    persistent: bool,
    group: u16,
    /// Requests made so far.
    requested: u32,
    completed: u32,
    current: Option<Current>,
    /// No request at or after this time.
    stop: Time,
}

impl Client {
    /// Ask for the next file (or start the transfer).
    fn request(&mut self, cx: &mut Cx<'_>) {
        let now = cx.now;
        let size = match (self.single, &self.sizes) {
            (Some(s), _) => s,
            (None, Some(d)) => d.sample(&mut self.rng),
            (None, None) => unreachable!("downloads without sizes"),
        };
        let t = &mut self.tcp;
        if self.persistent && self.requested > 0 {
            t.snd.send_more(now, size, cx.out);
            t.rcv.expect_more(t.snd.app_segments());
        } else {
            if self.requested > 0 {
                t.reconnect(cx.flow, &self.cfg);
            }
            t.snd.start(now, Some(size), cx.out);
            t.rcv.expect_segments = Some(t.snd.segments_for(size));
        }
        let r = &mut cx.rec.transfers;
        r.flow.push(cx.flow);
        r.group.push(self.group);
        r.index.push(self.requested);
        r.conn.push(t.conn);
        r.size_bytes.push(size);
        r.request_ns.push(now.as_nanos());
        r.end_ns.push(-1);
        r.retransmits.push(-1);
        r.timeouts.push(-1);
        self.current = Some(Current { row: r.flow.len() - 1, retx0: t.snd.stats.retransmits, rto0: t.snd.stats.timeouts });
        self.requested += 1;
    }

    /// After data reached the client: if the file is complete, note its end and ask
    /// for the next after a think time.
    fn check_done(&mut self, cx: &mut Cx<'_>) {
        let now = cx.now;
        let t = &self.tcp;
        if self.current.is_none() || t.rcv.completed_at.is_none() {
            return;
        }
        let cur = self.current.take().unwrap();
        let r = &mut cx.rec.transfers;
        r.end_ns[cur.row] = now.as_nanos() as i64;
        r.retransmits[cur.row] = (t.snd.stats.retransmits - cur.retx0) as i64;
        r.timeouts[cur.row] = (t.snd.stats.timeouts - cur.rto0) as i64;
        self.completed += 1;
        if self.single.is_some() {
            return;
        }
        let think = self.think.as_ref().expect("downloads with a think time");
        let at = now + think.sample(&mut self.rng);
        if at < self.stop && at < cx.end {
            cx.at.push((at, AppEvent::Request));
        }
    }
}

impl Endpoint for Client {
    fn start(&mut self, cx: &mut Cx<'_>) {
        self.request(cx);
    }
    #[inline]
    fn on_packet(&mut self, p: &Packet, cx: &mut Cx<'_>) {
        self.tcp.on_packet(p, cx);
        if p.kind.is_forward() {
            self.check_done(cx);
        }
    }
    fn on_timer(&mut self, cx: &mut Cx<'_>) {
        self.tcp.on_timer(cx.now, cx.out);
    }
    fn on_app(&mut self, ev: AppEvent, cx: &mut Cx<'_>) {
        if ev == AppEvent::Request {
            self.request(cx);
        }
    }
    #[inline]
    fn poll_at(&self) -> Option<Time> {
        self.tcp.poll_at()
    }
    fn connection(&self) -> u32 {
        self.tcp.conn
    }
    fn sample(&self, r: &mut FlowSeries) {
        self.tcp.sample(r);
    }
    fn finish(&self, t: &mut FlowTable) {
        let end = if self.single.is_some() { self.tcp.rcv.completed_at } else { None };
        self.tcp.finish(t, end, self.completed);
    }
}
