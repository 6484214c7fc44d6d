//! CAKE's flow classification (sch_cake `cake_hash`): the 8-way set-associative
//! hash of flows onto queues, and the host slots of the dual and triple isolation
//! modes whose bulk-flow counts divide each flow's quantum.

use super::*;

impl<P: QPacket> Cake<P> {
    pub(super) fn hash32(&self, key: u64) -> u32 {
        mix(key ^ self.params.hash_perturbation) as u32
    }

    /// sch_cake `cake_hash`: the flow queue of a packet, with the set-associative
    /// lookup and, in the dual and triple modes, its hosts' slots.
    pub fn classify(&mut self, pkt: &P) -> usize {
        let mode = self.params.flow_mode;
        if mode == FlowMode::Flowblind {
            return 0;
        }
        let src_hash = self.hash32(pkt.src_host());
        let dst_hash = self.hash32(pkt.dst_host());
        let mut flow_hash = if mode.has(FLOWS) { self.hash32(pkt.flow_key()) } else { 0 };
        if !mode.has(FLOWS) {
            if mode.has(SRC_IP) {
                flow_hash ^= src_hash;
            }
            if mode.has(DST_IP) {
                flow_hash ^= dst_hash;
            }
        }
        let mut reduced = flow_hash as usize % QUEUES;
        if self.tags[reduced] == flow_hash && self.flows[reduced].set != Set::None {
            self.ways.directs += 1;
            return reduced;
        }
        let inner = reduced % WAYS;
        let outer = reduced - inner;
        let (mut alloc_src, mut alloc_dst) = (false, false);
        let mut k = inner;
        let mut found = false;
        // a queue of the set already reserved for this flow?
        for i in 0..WAYS {
            if self.tags[outer + k] == flow_hash {
                if i > 0 {
                    self.ways.hits += 1;
                }
                if self.flows[outer + k].set == Set::None {
                    alloc_src = mode.dual_src();
                    alloc_dst = mode.dual_dst();
                }
                found = true;
                break;
            }
            k = (k + 1) % WAYS;
        }
        if !found {
            // an empty one?
            for _ in 0..WAYS {
                if self.flows[outer + k].set == Set::None {
                    self.ways.misses += 1;
                    alloc_src = mode.dual_src();
                    alloc_dst = mode.dual_dst();
                    found = true;
                    break;
                }
                k = (k + 1) % WAYS;
            }
        }
        if !found {
            // no empty queue: accept the collision in the original queue
            self.ways.collisions += 1;
            if self.flows[outer + k].set == Set::Bulk {
                let f = &self.flows[reduced];
                self.hosts[f.srchost as usize].src_bulk -= 1;
                self.hosts[f.dsthost as usize].dst_bulk -= 1;
            }
            alloc_src = mode.dual_src();
            alloc_dst = mode.dual_dst();
        }
        reduced = outer + k;
        self.tags[reduced] = flow_hash;
        if alloc_src {
            let idx = self.host_slot(src_hash, true);
            if self.flows[reduced].set == Set::Bulk {
                self.hosts[idx].src_bulk += 1;
            }
            self.flows[reduced].srchost = idx as u16;
        }
        if alloc_dst {
            let idx = self.host_slot(dst_hash, false);
            if self.flows[reduced].set == Set::Bulk {
                self.hosts[idx].dst_bulk += 1;
            }
            self.flows[reduced].dsthost = idx as u16;
        }
        reduced
    }

    /// A host's slot in the set-associative host table: the one tagged with it, else
    /// one without bulk flows (tagging it), else the first of the set.
    pub(super) fn host_slot(&mut self, hash: u32, src: bool) -> usize {
        let idx = hash as usize % QUEUES;
        let inner = idx % WAYS;
        let outer = idx - inner;
        let mut k = inner;
        for _ in 0..WAYS {
            let h = &self.hosts[outer + k];
            if (if src { h.src_tag } else { h.dst_tag }) == hash {
                return outer + k;
            }
            k = (k + 1) % WAYS;
        }
        for _ in 0..WAYS {
            let h = &self.hosts[outer + k];
            if (if src { h.src_bulk } else { h.dst_bulk }) == 0 {
                break;
            }
            k = (k + 1) % WAYS;
        }
        if src {
            self.hosts[outer + k].src_tag = hash;
        } else {
            self.hosts[outer + k].dst_tag = hash;
        }
        outer + k
    }

    /// The bulk-flow load of a flow's hosts in the dual and triple modes (at least 1).
    pub(super) fn host_load(&self, idx: usize) -> u16 {
        let mode = self.params.flow_mode;
        let f = &self.flows[idx];
        let mut load = 1;
        if mode.dual_src() {
            load = load.max(self.hosts[f.srchost as usize].src_bulk);
        }
        if mode.dual_dst() {
            load = load.max(self.hosts[f.dsthost as usize].dst_bulk);
        }
        load
    }

    pub(super) fn bulk_hosts(&mut self, idx: usize, up: bool) {
        let mode = self.params.flow_mode;
        let (s, d) = (self.flows[idx].srchost as usize, self.flows[idx].dsthost as usize);
        if mode.dual_src() {
            let c = &mut self.hosts[s].src_bulk;
            *c = if up { *c + 1 } else { *c - 1 };
        }
        if mode.dual_dst() {
            let c = &mut self.hosts[d].dst_bulk;
            *c = if up { *c + 1 } else { *c - 1 };
        }
    }
}
