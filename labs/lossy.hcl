# Why RoCE wants a lossless network: RDMA WRITE bandwidth (ib_write_bw over
# Soft-RoCE) and the TCP baseline on one link, each under 0 %, 0.1 %, 1 % and
# 5 % packet loss. The loss is the kernel's netem qdisc on the client's data
# NIC, the sender of both transfers' data (netem drops what a netdev sends),
# applied just before each point's workload and removed right after.
#   rlab run -var server=10.0.0.5 -var client=10.0.0.6 labs/lossy.hcl
#
# What to look for, in report.html and summary.md (each sample's metadata
# names the impairment in force: extra "impair" and "impair_loss"):
#   - TCP gives up a little at 0.1 % and more at 1 % and 5 %: it retransmits
#     only what was lost (selective ACKs) and backs off its window.
#   - RDMA falls off much faster: a Reliable Connection QP is go-back-N. One
#     lost packet makes the responder NAK every later packet (a PSN sequence
#     error) and the requester resends everything after the loss, or waits
#     for its retransmission timer when the loss was the last packet, so
#     throughput collapses at loss rates TCP shrugs off. That is why RoCE
#     fabrics are built lossless (PFC, ECN).
#   - The counters say why, per point (the report's loss table and each
#     workload's "slow because of what"): a loss is a sequence error, rxe's
#     out_of_seq_request on the server and rcvd_seq_err on the client, with
#     completer_retry_err (the client's resends) and, when an ACK came too
#     late, duplicate_request on the server; tcp's sender counts its
#     resent segments (tcpi_total_retrans).
#   - The capture "roce" shows it on the wire, one per point: the report
#     (and rlab pcap on hosts/server/captures/cap.roce.*) counts the NAKs
#     (ACK opcode with a NAK syndrome) and the PSNs sent twice.
# Each point runs for var.seconds; a point is seconds, so the sweep is quick
# on real machines and sized down on emulated ones with -var seconds=2s.
lab "lossy" {
  description = "RDMA WRITE and TCP throughput on one link under 0, 0.1, 1 and 5 % loss (netem)"
}

variable "server" {
  type        = string
  default     = "192.0.2.10"
  description = "Address of the server machine"
}

variable "client" {
  type        = string
  default     = "192.0.2.11"
  description = "Address of the client machine (its data NIC is impaired)"
}

variable "netdev" {
  type    = string
  default = "eth1"
}

variable "loss" {
  type        = list(string)
  default     = ["0", "0.1", "1", "5"]
  description = "Loss points, in percent"
}

variable "seconds" {
  type        = string
  default     = "10s"
  description = "How long each point runs"
}

ssh {
  user          = "root"
  identity_file = "~/.ssh/id_ed25519"
  known_hosts   = "~/.ssh/known_hosts"
}

host "server" {
  address = var.server
}

host "client" {
  address = var.client
}

rxe "server" {
  host   = host.server
  netdev = var.netdev
}

rxe "client" {
  host   = host.client
  netdev = var.netdev
}

workload "rdma" {
  for_each = toset(var.loss)
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.client
  sizes    = ["64KiB"]
  duration = var.seconds
}

workload "tcp" {
  for_each = toset(var.loss)
  tool     = "tcp"
  server   = host.server
  client   = host.client
  duration = var.seconds
}

# One impairment per point and transfer, each in force during its workload
# only; netem is one qdisc per netdev, so two in force at once are refused.
impair "rdma_loss" {
  for_each = toset(var.loss)
  host     = host.client
  netdev   = var.netdev
  loss     = "${each.key}%"
  during   = [workload.rdma[each.key]]
}

impair "tcp_loss" {
  for_each = toset(var.loss)
  host     = host.client
  netdev   = var.netdev
  loss     = "${each.key}%"
  during   = [workload.tcp[each.key]]
}

# RoCEv2 headers as the server receives them: the resent PSNs, and the NAKs
# it answers with. One capture per RDMA point, scoped to it alone, so each
# point's wire analysis is its own (results.json lists each workload's
# captures; the report puts their numbers beside the point).
capture "roce" {
  for_each = toset(var.loss)
  host     = host.server
  netdev   = var.netdev
  filter   = "udp port 4791"
  snaplen  = 96
  max_size = "64MiB"
  during   = [workload.rdma[each.key]]
}
