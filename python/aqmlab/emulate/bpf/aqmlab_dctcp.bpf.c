// SPDX-License-Identifier: GPL-2.0
/*
 * aqmlab_dctcp: DCTCP as a BPF TCP congestion control (struct_ops), for
 * `aqmlab emulate` on kernels built without tcp_dctcp.
 *
 * A port of Linux net/ipv4/tcp_dctcp.c and tcp_dctcp.h (Borkmann, Westphal,
 * Judd), which implement Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM
 * 2010, and RFC 8257 (Bensley et al., "Data Center TCP (DCTCP): TCP Congestion
 * Control for Data Centers", 2017). Each function names the kernel function it
 * follows. What differs from the module:
 *   - the fallback to Reno when ECN was not negotiated switches the socket to
 *     the kernel's "reno" (bpf_setsockopt TCP_CONGESTION), which also clears
 *     ECT from the socket (tcp_reinit_congestion_control), where the module
 *     swaps in its own dctcp-reno ops and calls INET_ECN_dontxmit;
 *   - the module parameters are constants: dctcp_shift_g = 4 (g = 1/16),
 *     dctcp_alpha_on_init = DCTCP_MAX_ALPHA;
 *   - no get_info (ss -i shows no dctcp: line) and no PLB (Protective Load
 *     Balancing, off unless net.ipv4.tcp_plb_enabled is set).
 * It registers as "aqmlab_dctcp", never as the kernel's "dctcp".
 *
 * Build: see Makefile beside this file (clang -target bpf, vmlinux.h from the
 * running kernel's BTF); register: bpftool struct_ops register aqmlab_dctcp.bpf.o
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "GPL";

/* include/net/tcp.h (the tcp_sock ecn_flags bits, RFC 3168 and AccECN modes) */
#define ECN_MODE_RFC3168 (1U << 0)
#define ECN_DEMAND_CWR (1U << 2)
#define ECN_MODE_ACCECN (1U << 4)
#define CONG_NEEDS_ECN 0x2 /* TCP_CONG_NEEDS_ECN */
#define SOL_TCP 6
#define TCP_CONGESTION 13

#define DCTCP_MAX_ALPHA 1024U
#define DCTCP_SHIFT_G 4U /* g = 1/2^4 */

/* The private state, in icsk_ca_priv (struct dctcp of tcp_dctcp.c). */
struct aqmlab_dctcp {
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 prior_rcv_nxt;
	__u32 alpha;
	__u32 next_seq;
	__u32 ce_state;
	__u32 loss_cwnd;
};

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

static __always_inline struct aqmlab_dctcp *ca_of(struct sock *sk)
{
	return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline struct tcp_sock *tp_of(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline __u32 umax(__u32 a, __u32 b) { return a > b ? a : b; }
static __always_inline __u32 umin(__u32 a, __u32 b) { return a < b ? a : b; }

/* The start of an observation window: one window of data from snd_nxt
 * (tcp_dctcp.c dctcp_reset). */
static __always_inline void window_reset(const struct tcp_sock *tp, struct aqmlab_dctcp *ca)
{
	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

/* tcp_dctcp.c dctcp_init: DCTCP state where ECN was negotiated (or the socket is
 * not connected yet); otherwise Reno without ECT. */
SEC("struct_ops")
void BPF_PROG(aqmlab_dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = tp_of(sk);
	struct aqmlab_dctcp *ca = ca_of(sk);
	int state = sk->__sk_common.skc_state;

	if ((tp->ecn_flags & (ECN_MODE_RFC3168 | ECN_MODE_ACCECN)) || state == TCP_LISTEN || state == TCP_CLOSE) {
		ca->prior_rcv_nxt = tp->rcv_nxt;
		ca->alpha = DCTCP_MAX_ALPHA; /* min(dctcp_alpha_on_init, DCTCP_MAX_ALPHA) */
		ca->loss_cwnd = 0;
		ca->ce_state = 0;
		window_reset(tp, ca);
		return;
	}
	char reno[] = "reno";
	bpf_setsockopt(sk, SOL_TCP, TCP_CONGESTION, reno, sizeof(reno));
}

/* tcp_dctcp.c dctcp_ssthresh: cwnd * (1 - alpha/2), alpha in 1/1024. */
SEC("struct_ops")
__u32 BPF_PROG(aqmlab_dctcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tp_of(sk);
	struct aqmlab_dctcp *ca = ca_of(sk);
	__u32 cwnd = tp->snd_cwnd;

	ca->loss_cwnd = cwnd;
	return umax(cwnd - ((cwnd * ca->alpha) >> 11U), 2U);
}

/* tcp_dctcp.c dctcp_update_alpha (the in_ack_event hook): once per window of
 * data, alpha <- (1 - g) alpha + g F, F the fraction of delivered segments
 * that were CE-marked (tp->delivered_ce counts the ECE-echoed ones). */
SEC("struct_ops")
void BPF_PROG(aqmlab_dctcp_update_alpha, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = tp_of(sk);
	struct aqmlab_dctcp *ca = ca_of(sk);

	if ((__s32)(tp->snd_una - ca->next_seq) < 0) /* before(snd_una, next_seq) */
		return;
	__u32 delivered_ce = tp->delivered_ce - ca->old_delivered_ce;
	__u32 alpha = ca->alpha;
	/* alpha -= min_not_zero(alpha, alpha >> g) */
	__u32 dec = alpha >> DCTCP_SHIFT_G;
	alpha -= dec ? umin(alpha, dec) : alpha;
	if (delivered_ce) {
		__u32 delivered = tp->delivered - ca->old_delivered;

		delivered_ce <<= (10U - DCTCP_SHIFT_G);
		delivered_ce /= umax(1U, delivered);
		alpha = umin(alpha + delivered_ce, DCTCP_MAX_ALPHA);
	}
	ca->alpha = alpha;
	window_reset(tp, ca);
}

/* tcp_dctcp.c dctcp_react_to_loss: halve on loss, as Reno. */
static __always_inline void react_to_loss(struct sock *sk)
{
	struct tcp_sock *tp = tp_of(sk);
	struct aqmlab_dctcp *ca = ca_of(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = umax(tp->snd_cwnd >> 1U, 2U);
}

/* tcp_dctcp.c dctcp_state: entering fast recovery is a loss (the RTO is
 * handled at CA_EVENT_LOSS). */
SEC("struct_ops")
void BPF_PROG(aqmlab_dctcp_set_state, struct sock *sk, __u8 new_state)
{
	__u8 old = BPF_CORE_READ_BITFIELD((struct inet_connection_sock *)sk, icsk_ca_state);

	if (new_state == TCP_CA_Recovery && new_state != old)
		react_to_loss(sk);
}

/* tcp_dctcp.h dctcp_ece_ack_cwr: echo ECE on every ACK while ce_state is 1. */
static __always_inline void ece_ack_cwr(struct sock *sk, __u32 ce_state)
{
	struct tcp_sock *tp = tp_of(sk);

	if (ce_state == 1)
		tp->ecn_flags |= ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~ECN_DEMAND_CWR;
}

/* tcp_dctcp.h dctcp_ece_ack_update, the receiver's CE state machine (RFC 8257
 * §3.2): ACK at once when the CE state of the arriving segments changes, and if
 * a delayed ACK was pending, first send it with the previous state's ECE for
 * the data up to prior_rcv_nxt. */
static __always_inline void ece_ack_update(struct sock *sk, enum tcp_ca_event ev, struct aqmlab_dctcp *ca)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	__u32 new_state = ev == CA_EVENT_ECN_IS_CE ? 1 : 0;

	if (ca->ce_state != new_state) {
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			ece_ack_cwr(sk, ca->ce_state);
			bpf_tcp_send_ack(sk, ca->prior_rcv_nxt);
		}
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	ca->prior_rcv_nxt = tp_of(sk)->rcv_nxt;
	ca->ce_state = new_state;
	ece_ack_cwr(sk, new_state);
}

/* tcp_dctcp.c dctcp_cwnd_event */
SEC("struct_ops")
void BPF_PROG(aqmlab_dctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct aqmlab_dctcp *ca = ca_of(sk);

	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
	case CA_EVENT_ECN_NO_CE:
		ece_ack_update(sk, ev, ca);
		break;
	case CA_EVENT_LOSS:
		react_to_loss(sk);
		break;
	default:
		break;
	}
}

/* tcp_dctcp.c dctcp_cwnd_undo */
SEC("struct_ops")
__u32 BPF_PROG(aqmlab_dctcp_undo_cwnd, struct sock *sk)
{
	return umax(tp_of(sk)->snd_cwnd, ca_of(sk)->loss_cwnd);
}

/* Reno's window growth, the kernel's own (tcp_cong.c tcp_reno_cong_avoid, a kfunc). */
SEC("struct_ops")
void BPF_PROG(aqmlab_dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC(".struct_ops")
struct tcp_congestion_ops aqmlab_dctcp = {
	.init = (void *)aqmlab_dctcp_init,
	.in_ack_event = (void *)aqmlab_dctcp_update_alpha,
	.cwnd_event = (void *)aqmlab_dctcp_cwnd_event,
	.ssthresh = (void *)aqmlab_dctcp_ssthresh,
	.cong_avoid = (void *)aqmlab_dctcp_cong_avoid,
	.undo_cwnd = (void *)aqmlab_dctcp_undo_cwnd,
	.set_state = (void *)aqmlab_dctcp_set_state,
	.flags = CONG_NEEDS_ECN,
	.name = "aqmlab_dctcp",
};
