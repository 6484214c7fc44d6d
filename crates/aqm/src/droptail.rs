//! DropTail: a FIFO that refuses packets when full. The reference every AQM is
//! compared against (Kuhn & Ros, MADPIE §IV; Jou, Tan & Baras §IV).

use serde::{Deserialize, Serialize};

use crate::queue::{Backlog, Fifo, Limit};
use crate::{Admit, Aqm, Cause, Ctx, Departure, Dropped, QPacket};

/// DropTail has no parameters of its own; its limit is the link's buffer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropTailParams {}

impl DropTailParams {
    pub const DOC: &'static [(&'static str, &'static str)] = &[];
}

#[derive(Debug)]
pub struct DropTail<P> {
    fifo: Fifo<P>,
    limit: Limit,
}

impl<P: QPacket> DropTail<P> {
    pub fn new(_params: &DropTailParams, limit: Limit) -> Self {
        DropTail { fifo: Fifo::new(), limit }
    }
}

impl<P: QPacket> Aqm<P> for DropTail<P> {
    #[inline]
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        if self.limit.overflows(self.fifo.backlog(), pkt.size_bytes()) {
            drops.push(Dropped { pkt, cause: Cause::Overflow, sojourn: None });
            return Admit::Dropped(Cause::Overflow);
        }
        self.fifo.push(pkt, ctx.now);
        Admit::Queued
    }

    #[inline]
    fn dequeue(&mut self, ctx: &mut Ctx<'_>, _drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        let q = self.fifo.pop()?;
        Some(Departure { sojourn: ctx.now.saturating_since(q.enqueued_at), pkt: q.pkt, marked: None })
    }

    #[inline]
    fn backlog(&self) -> Backlog {
        self.fifo.backlog()
    }
}


impl crate::AqmParams for DropTailParams {
    const TITLE: &'static str = "FIFO that drops arrivals when the buffer is full";
    const SOURCE: &'static str = "the classic router queue";
    const DOC: &'static [(&'static str, &'static str)] = DropTailParams::DOC;
    type Algo<P: QPacket> = DropTail<P>;
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        DropTail::new(self, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use crate::time::{Duration, Time};

    #[test]
    fn packet_limit_refuses_the_next_packet_once_full() {
        let mut q = DropTail::new(&DropTailParams {}, Limit::packets(3));
        let mut r = rng(1);
        let mut drops = Vec::new();
        let mut c = ctx(Time::ZERO, &mut r);
        for i in 0..3 {
            assert_eq!(q.enqueue(pkt(i, 1500), &mut c, &mut drops), Admit::Queued);
        }
        assert_eq!(q.enqueue(pkt(3, 40), &mut c, &mut drops), Admit::Dropped(Cause::Overflow));
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].pkt.id, 3);
        assert_eq!(q.backlog(), Backlog { packets: 3, bytes: 4500 });
    }

    #[test]
    fn byte_limit_admits_what_fits_exactly() {
        // 4000 B limit: 1500 + 1500 = 3000 fits, another 1500 would make 4500 > 4000,
        // but a 1000 B packet makes exactly 4000 and fits.
        let mut q = DropTail::new(&DropTailParams {}, Limit::bytes(4000));
        let mut r = rng(1);
        let mut drops = Vec::new();
        let mut c = ctx(Time::ZERO, &mut r);
        assert_eq!(q.enqueue(pkt(0, 1500), &mut c, &mut drops), Admit::Queued);
        assert_eq!(q.enqueue(pkt(1, 1500), &mut c, &mut drops), Admit::Queued);
        assert_eq!(q.enqueue(pkt(2, 1500), &mut c, &mut drops), Admit::Dropped(Cause::Overflow));
        assert_eq!(q.enqueue(pkt(3, 1000), &mut c, &mut drops), Admit::Queued);
        assert_eq!(q.backlog().bytes, 4000);
    }

    #[test]
    fn fifo_order_and_sojourn_times() {
        let mut q = DropTail::new(&DropTailParams {}, Limit::packets(10));
        let mut r = rng(1);
        let mut drops = Vec::new();
        q.enqueue(pkt(0, 100), &mut ctx(Time::from_millis(1), &mut r), &mut drops);
        q.enqueue(pkt(1, 100), &mut ctx(Time::from_millis(2), &mut r), &mut drops);
        let d = q.dequeue(&mut ctx(Time::from_millis(5), &mut r), &mut drops).unwrap();
        assert_eq!((d.pkt.id, d.sojourn), (0, Duration::from_millis(4)));
        let d = q.dequeue(&mut ctx(Time::from_millis(6), &mut r), &mut drops).unwrap();
        assert_eq!((d.pkt.id, d.sojourn), (1, Duration::from_millis(4)));
        assert!(q.dequeue(&mut ctx(Time::from_millis(7), &mut r), &mut drops).is_none());
    }
}
