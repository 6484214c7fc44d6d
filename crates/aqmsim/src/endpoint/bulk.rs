//! `bulk`: long-lived TCP transfers that always have data to send, until the
//! group's `stop` (Kuhn & Ros §III's ten CUBIC flows; Jou, Tan & Baras's FTP flows).

use aqm::Time;
use serde::{Deserialize, Serialize};

use super::tcp_flow::TcpFlow;
use super::{AppEvent, Cx, Endpoint, FlowSetup, TrafficKind};
use crate::packet::Packet;
use crate::record::{FlowSeries, FlowTable};
use crate::tcp::TcpConfig;

/// Long-lived TCP transfers that always have data to send.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct BulkSpec {
    #[serde(default)]
    pub tcp: TcpConfig,
}

impl TrafficKind for BulkSpec {
    const FAMILY: &'static str = "bulk";
    type Endpoint = Bulk;
    fn tcp(&self) -> Option<&TcpConfig> {
        Some(&self.tcp)
    }
    /// A bulk sender stops writing at the group's `stop` (what it wrote is still
    /// delivered).
    fn stop_event(&self) -> bool {
        true
    }
    fn build(&self, f: &FlowSetup<'_>) -> Bulk {
        Bulk { tcp: TcpFlow::new(f.flow, &self.tcp).seeded(f) }
    }
}

pub struct Bulk {
    tcp: TcpFlow,
}

impl Endpoint for Bulk {
    fn start(&mut self, cx: &mut Cx<'_>) {
        self.tcp.snd.start(cx.now, None, cx.out);
    }
    #[inline]
    fn on_packet(&mut self, p: &Packet, cx: &mut Cx<'_>) {
        self.tcp.on_packet(p, cx);
    }
    fn on_timer(&mut self, cx: &mut Cx<'_>) {
        self.tcp.on_timer(cx.now, cx.out);
    }
    fn on_app(&mut self, ev: AppEvent, cx: &mut Cx<'_>) {
        if ev == AppEvent::Stop {
            self.tcp.snd.close(cx.now);
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
        self.tcp.finish(t, self.tcp.snd.finished_at, 0);
    }
}
