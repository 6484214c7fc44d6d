// aqmlab's ns-3 twin: the dumbbell of Kuhn & Ros (MADPIE Fig. 1) in ns-3 3.44, for
// cross-validation and speed comparison (`aqmlab bench --vs ns3`). Compiled by
// aqmlab against the headers and libraries of the `ns3` wheel from PyPI.
//
// One sender host and one receiver host, each behind a 100 Mbps / 1 ms access link
// (settable), a bottleneck R1 -> R2 with the AQM under test as the root queue disc
// (the device queue holds 1 packet so that queueing happens in the queue disc).
// Flow groups (`--groups`, `;`-separated): `bulk:COUNT:LO:HI` bulk TCP flows
// starting uniformly in [LO, HI] s, `cbr:COUNT:LO:HI:RATE_BPS:WIRE_BYTES` constant
// bit-rate UDP flows (the rate counts whole IP datagrams, as aqmlab's `cbr`).
// `--steps` (`T:RATE_BPS,...`) changes the bottleneck's rate at T s.
// Output: OUT.json with counters and per-flow received bytes, OUT.sojourn (float64
// ms, one per dequeued packet) and OUT.util (float64 busy fraction per second).
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace ns3;

namespace {
std::vector<double> g_sojourn_ms;
uint64_t g_drop_overflow = 0, g_drop_random = 0, g_drop_det = 0, g_marks = 0, g_enq = 0, g_drop_before = 0;
std::vector<double> g_busy;  // seconds busy per 1 s bin
Time g_tx_start;

void AddBusy(Time a, Time b) {
  double s = a.GetSeconds(), e = b.GetSeconds();
  while (s < e) {
    size_t bin = (size_t)s;
    double end = std::min(e, (double)(bin + 1));
    if (g_busy.size() <= bin) g_busy.resize(bin + 1, 0.0);
    g_busy[bin] += end - s;
    s = end;
  }
}

bool g_red = false;
// ns-3's drop reasons mapped to aqmlab's causes: PIE and RED "Unforced drop" are the
// random early drops; CoDel's "Target exceeded drop" and RED's "Forced drop" (average
// above max_th, or 2 max_th in gentle mode) are deterministic; a full queue (PIE's
// "Forced drop", "Overlimit drop", "Queue disc limit exceeded") is overflow.
void Classify(const char* why) {
  std::string r(why);
  if (getenv("AQMLAB_NS3_REASONS")) fprintf(stderr, "drop %.6f %s\n", Simulator::Now().GetSeconds(), why);
  if (r.find("Unforced") != std::string::npos) g_drop_random++;
  else if (r.find("Target exceeded") != std::string::npos) g_drop_det++;
  else if (g_red && r.find("Forced drop") != std::string::npos) g_drop_det++;
  else g_drop_overflow++;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    size_t b = s.find(sep, a);
    if (b == std::string::npos) b = s.size();
    if (b > a) out.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

void WriteDoubles(const std::string& path, const std::vector<double>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
}
}  // namespace

int main(int argc, char* argv[]) {
  uint32_t flows = 10, seed = 1, iw = 10, mss = 1460, ackEvery = 2;
  std::string rate = "10Mbps", delay = "48ms", accessRate = "100Mbps", accessDelay = "1ms";
  std::string buffer = "125000B", accessBuffer = "1000p", aqm = "pie", cc = "cubic", out = "ns3run";
  std::string groups, steps;
  double redMeanPkt = 1500, redTargetMs = 5;
  uint32_t fqQuantum = 1514, fqFlows = 1024;
  double duration = 300, startLo = 0, startHi = 1;
  double pieTargetMs = 15, pieTupdateMs = 15, pieBurstMs = 150, pieA = 0.125, pieB = 1.25;
  bool pieDqRate = true, sack = true, ecn = false, pieCap = true, pieDerand = false, timestamps = true;
  uint32_t pieMeanPkt = 1500, pieDqThresh = 16384;
  double codelTargetMs = 5, codelIntervalMs = 100, delackMs = 40, rtoMinMs = 200;
  double redMinTh = 0, redMaxTh = 0, redMaxP = 0.1, redQw = 0.002;
  CommandLine cmd;
  cmd.AddValue("flows", "bulk flows", flows);
  cmd.AddValue("seed", "run number", seed);
  cmd.AddValue("rate", "bottleneck rate", rate);
  cmd.AddValue("delay", "bottleneck one-way delay", delay);
  cmd.AddValue("access_rate", "access rate", accessRate);
  cmd.AddValue("access_delay", "access delay", accessDelay);
  cmd.AddValue("buffer", "bottleneck buffer (e.g. 125000B or 83p)", buffer);
  cmd.AddValue("access_buffer", "access buffer", accessBuffer);
  cmd.AddValue("aqm", "droptail|pie|codel|fq_codel|red|ared", aqm);
  cmd.AddValue("cc", "cubic|newreno", cc);
  cmd.AddValue("duration", "seconds", duration);
  cmd.AddValue("start_lo", "s", startLo);
  cmd.AddValue("start_hi", "s", startHi);
  cmd.AddValue("iw", "initial window", iw);
  cmd.AddValue("mss", "segment size", mss);
  cmd.AddValue("sack", "SACK", sack);
  cmd.AddValue("timestamps", "TCP timestamps (RFC 7323; the segment then carries mss - 12 bytes, as Linux's)", timestamps);
  cmd.AddValue("ecn", "ECN", ecn);
  cmd.AddValue("ack_every", "delayed ACK count", ackEvery);
  cmd.AddValue("delack_ms", "delayed ACK timeout", delackMs);
  cmd.AddValue("rto_min_ms", "minimum RTO", rtoMinMs);
  cmd.AddValue("pie_target_ms", "", pieTargetMs);
  cmd.AddValue("pie_tupdate_ms", "", pieTupdateMs);
  cmd.AddValue("pie_burst_ms", "", pieBurstMs);
  cmd.AddValue("pie_alpha", "", pieA);
  cmd.AddValue("pie_beta", "", pieB);
  cmd.AddValue("pie_dq_rate", "departure-rate estimator", pieDqRate);
  cmd.AddValue("pie_mean_pkt", "PIE mean packet size (bytes)", pieMeanPkt);
  cmd.AddValue("pie_dq_threshold", "PIE departure-rate measurement threshold (bytes)", pieDqThresh);
  cmd.AddValue("pie_cap_drop", "PIE cap on drop adjustment", pieCap);
  cmd.AddValue("pie_derandomize", "PIE de-randomization", pieDerand);
  cmd.AddValue("codel_target_ms", "", codelTargetMs);
  cmd.AddValue("codel_interval_ms", "", codelIntervalMs);
  cmd.AddValue("red_min_th", "packets (0: automatic)", redMinTh);
  cmd.AddValue("red_max_th", "packets (0: automatic)", redMaxTh);
  cmd.AddValue("red_max_p", "", redMaxP);
  cmd.AddValue("red_qw", "", redQw);
  cmd.AddValue("fq_quantum", "FQ-CoDel quantum (bytes)", fqQuantum);
  cmd.AddValue("fq_flows", "FQ-CoDel queues", fqFlows);
  cmd.AddValue("red_mean_pkt", "RED mean packet size (bytes)", redMeanPkt);
  cmd.AddValue("red_target_ms", "ARED target delay", redTargetMs);
  cmd.AddValue("groups", "flow groups: bulk:N:LO:HI;cbr:N:LO:HI:BPS:BYTES", groups);
  cmd.AddValue("steps", "bottleneck rate steps: T:BPS,...", steps);
  cmd.AddValue("out", "output prefix", out);
  cmd.Parse(argc, argv);
  RngSeedManager::SetSeed(1);
  RngSeedManager::SetRun(seed);

  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue(cc == "newreno" ? "ns3::TcpNewReno" : "ns3::TcpCubic"));
  // With timestamps the 12-byte option comes out of the segment, so that packets keep
  // aqmlab's size on the wire (Linux: MSS 1448 on a 1500-byte MTU).
  uint32_t segment = timestamps ? mss - 12 : mss;
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segment));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(iw));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(ackEvery));
  Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(delackMs)));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 27));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 27));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
  Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(timestamps));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(rtoMinMs)));
  Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue(ecn ? "On" : "Off"));

  NodeContainer nodes;
  nodes.Create(4);  // sender, R1, R2, receiver
  PointToPointHelper access;
  access.SetDeviceAttribute("DataRate", StringValue(accessRate));
  access.SetChannelAttribute("Delay", StringValue(accessDelay));
  access.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue(accessBuffer));
  PointToPointHelper bottleneck;
  bottleneck.SetDeviceAttribute("DataRate", StringValue(rate));
  bottleneck.SetChannelAttribute("Delay", StringValue(delay));
  bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
  NetDeviceContainer dUp = access.Install(nodes.Get(0), nodes.Get(1));
  NetDeviceContainer dBn = bottleneck.Install(nodes.Get(1), nodes.Get(2));
  NetDeviceContainer dDown = access.Install(nodes.Get(2), nodes.Get(3));
  InternetStackHelper stack;
  stack.Install(nodes);

  QueueSizeValue qsize{QueueSize(buffer)};
  TrafficControlHelper tch;
  if (aqm == "pie") {
    tch.SetRootQueueDisc("ns3::PieQueueDisc", "MaxSize", qsize, "QueueDelayReference", TimeValue(MilliSeconds(pieTargetMs)),
                         "Tupdate", TimeValue(MilliSeconds(pieTupdateMs)), "MaxBurstAllowance", TimeValue(MilliSeconds(pieBurstMs)),
                         "A", DoubleValue(pieA), "B", DoubleValue(pieB), "UseDequeueRateEstimator", BooleanValue(pieDqRate),
                         "UseEcn", BooleanValue(ecn), "MeanPktSize", UintegerValue(pieMeanPkt),
                         "DequeueThreshold", UintegerValue(pieDqThresh), "UseCapDropAdjustment", BooleanValue(pieCap),
                         "UseDerandomization", BooleanValue(pieDerand));
  } else if (aqm == "codel") {
    tch.SetRootQueueDisc("ns3::CoDelQueueDisc", "MaxSize", qsize, "Target", TimeValue(MilliSeconds(codelTargetMs)),
                         "Interval", TimeValue(MilliSeconds(codelIntervalMs)), "UseEcn", BooleanValue(ecn));
  } else if (aqm == "fq_codel") {
    tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", qsize, "Target", StringValue(std::to_string(codelTargetMs) + "ms"),
                         "Interval", StringValue(std::to_string(codelIntervalMs) + "ms"), "UseEcn", BooleanValue(ecn),
                         "Flows", UintegerValue(fqFlows));
  } else if (aqm == "red" || aqm == "ared") {
    tch.SetRootQueueDisc("ns3::RedQueueDisc", "MaxSize", qsize, "ARED", BooleanValue(aqm == "ared"), "Gentle", BooleanValue(true),
                         "Wait", BooleanValue(false),
                         "MinTh", DoubleValue(redMinTh), "MaxTh", DoubleValue(redMaxTh), "LInterm", DoubleValue(1.0 / redMaxP),
                         "QW", DoubleValue(aqm == "ared" ? 0.0 : redQw), "LinkBandwidth", StringValue(rate),
                         "LinkDelay", StringValue(delay), "UseEcn", BooleanValue(ecn), "MeanPktSize", UintegerValue((uint32_t)redMeanPkt),
                         "TargetDelay", TimeValue(MilliSeconds(redTargetMs)));
    g_red = true;
  } else {
    tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", qsize);
  }
  Ptr<QueueDisc> qd = tch.Install(dBn.Get(0)).Get(0);
  if (aqm == "fq_codel") DynamicCast<FqCoDelQueueDisc>(qd)->SetQuantum(fqQuantum);
  TrafficControlHelper rev;
  rev.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", qsize);
  rev.Install(dBn.Get(1));

  qd->TraceConnectWithoutContext("SojournTime", MakeCallback(+[](Time t) { g_sojourn_ms.push_back(t.GetSeconds() * 1e3); }));
  qd->TraceConnectWithoutContext("Enqueue", MakeCallback(+[](Ptr<const QueueDiscItem>) { g_enq++; }));
  // refused arrivals (never enqueued) apart from packets dropped after they were
  // enqueued (CoDel's and FQ-CoDel's drops at dequeue, FQ-CoDel's drops from the fattest queue)
  qd->TraceConnectWithoutContext("DropBeforeEnqueue", MakeCallback(+[](Ptr<const QueueDiscItem>, const char* why) { g_drop_before++; Classify(why); }));
  qd->TraceConnectWithoutContext("DropAfterDequeue", MakeCallback(+[](Ptr<const QueueDiscItem>, const char* why) { Classify(why); }));
  qd->TraceConnectWithoutContext("Mark", MakeCallback(+[](Ptr<const QueueDiscItem>, const char*) { g_marks++; }));
  Ptr<NetDevice> bnDev = dBn.Get(0);
  bnDev->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(+[](Ptr<const Packet>) { g_tx_start = Simulator::Now(); }));
  bnDev->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(+[](Ptr<const Packet>) { AddBusy(g_tx_start, Simulator::Now()); }));

  Ipv4AddressHelper addr;
  addr.SetBase("10.0.0.0", "255.255.255.0");
  addr.Assign(dUp);
  addr.SetBase("10.0.1.0", "255.255.255.0");
  addr.Assign(dBn);
  addr.SetBase("10.0.2.0", "255.255.255.0");
  Ipv4InterfaceContainer iDown = addr.Assign(dDown);
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  if (groups.empty()) groups = "bulk:" + std::to_string(flows) + ":" + std::to_string(startLo) + ":" + std::to_string(startHi);
  Ptr<UniformRandomVariable> start = CreateObject<UniformRandomVariable>();
  std::vector<Ptr<PacketSink>> sinks;
  std::vector<int> sinkGroup;
  std::vector<double> sinkStart;
  uint16_t port = 5000;
  int gi = 0;
  for (const std::string& g : Split(groups, ';')) {
    std::vector<std::string> f = Split(g, ':');
    uint32_t n = std::stoul(f.at(1));
    double lo = std::stod(f.at(2)), hi = std::stod(f.at(3));
    bool cbr = f.at(0) == "cbr";
    for (uint32_t i = 0; i < n; i++, port++) {
      double at = hi > lo ? start->GetValue(lo, hi) : lo;
      std::string factory = cbr ? "ns3::UdpSocketFactory" : "ns3::TcpSocketFactory";
      ApplicationContainer a;
      if (cbr) {
        // the rate counts whole IP datagrams (IP + UDP headers: 28 bytes)
        uint32_t wire = std::stoul(f.at(5)), payload = wire - 28;
        OnOffHelper src(factory, InetSocketAddress(iDown.GetAddress(1), port));
        src.SetConstantRate(DataRate((uint64_t)(std::stod(f.at(4)) * payload / wire)), payload);
        a = src.Install(nodes.Get(0));
      } else {
        BulkSendHelper src(factory, InetSocketAddress(iDown.GetAddress(1), port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(segment * 16));
        a = src.Install(nodes.Get(0));
      }
      a.Start(Seconds(at));
      PacketSinkHelper sink(factory, InetSocketAddress(Ipv4Address::GetAny(), port));
      ApplicationContainer s = sink.Install(nodes.Get(3));
      s.Start(Seconds(0));
      sinks.push_back(DynamicCast<PacketSink>(s.Get(0)));
      sinkGroup.push_back(gi);
      sinkStart.push_back(at);
    }
    gi++;
  }
  Ptr<PointToPointNetDevice> bnTx = DynamicCast<PointToPointNetDevice>(dBn.Get(0));
  for (const std::string& st : Split(steps, ',')) {
    std::vector<std::string> f = Split(st, ':');
    DataRate r((uint64_t)std::stod(f.at(1)));
    Simulator::Schedule(Seconds(std::stod(f.at(0))), [bnTx, r]() { bnTx->SetDataRate(r); });
  }
  Simulator::Stop(Seconds(duration));
  Simulator::Run();

  g_busy.resize((size_t)duration, 0.0);
  WriteDoubles(out + ".sojourn", g_sojourn_ms);
  WriteDoubles(out + ".util", g_busy);
  std::ofstream js(out + ".json");
  js << "{\"enqueued\": " << g_enq << ", \"refused\": " << g_drop_before << ", \"dequeued\": " << g_sojourn_ms.size() << ", \"drops\": {\"overflow\": " << g_drop_overflow
     << ", \"random\": " << g_drop_random << ", \"deterministic\": " << g_drop_det << "}, \"marks\": " << g_marks
     << ", \"rx_bytes\": [";
  for (size_t i = 0; i < sinks.size(); i++) js << (i ? ", " : "") << sinks[i]->GetTotalRx();
  js << "], \"group\": [";
  for (size_t i = 0; i < sinks.size(); i++) js << (i ? ", " : "") << sinkGroup[i];
  js << "], \"start\": [";
  for (size_t i = 0; i < sinks.size(); i++) js << (i ? ", " : "") << sinkStart[i];
  js << "]}\n";
  Simulator::Destroy();
  return 0;
}
