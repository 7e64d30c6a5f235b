# Incast: several senders, one receiver, which is where congestion starts.
# Two clients each write to one server alone (a_alone, then b_alone: the
# server's link and CPU to themselves), then both at once (group "incast":
# a_together and b_together start together and share them). summary.md's
# "Alone vs together" table puts each client's bandwidth alone beside its
# bandwidth together; the sum of the two together is what the server took
# in. Every workload keeps its own port, logs and samples.
#
# Three machines on one network, each with an rxe on its data NIC:
#   rlab run -var server=10.0.0.5 -var client_a=10.0.0.6 -var client_b=10.0.0.7 labs/incast.hcl
# (engine/vm's TestE2ERing runs it on the three VMs of labs/ring.hcl.)
lab "incast" {
  description = "Two clients write to one server (RDMA WRITE over Soft-RoCE), each alone, then both at once"
}

variable "server" {
  type    = string
  default = "192.0.2.10"
}

variable "client_a" {
  type    = string
  default = "192.0.2.11"
}

variable "client_b" {
  type    = string
  default = "192.0.2.12"
}

variable "netdev" {
  type    = string
  default = "eth1"
}

variable "seconds" {
  type        = string
  default     = "10s"
  description = "How long each transfer runs, alone and together"
}

ssh {
  user          = "root"
  identity_file = "~/.ssh/id_ed25519"
  known_hosts   = "~/.ssh/known_hosts"
}

host "server" {
  address = var.server
}

host "a" {
  address = var.client_a
}

host "b" {
  address = var.client_b
}

rxe "server" {
  host   = host.server
  netdev = var.netdev
}

rxe "a" {
  host   = host.a
  netdev = var.netdev
}

rxe "b" {
  host   = host.b
  netdev = var.netdev
}

# Alone: the workloads share the server, so they run one after another.
workload "a_alone" {
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.a
  sizes    = ["64KiB"]
  duration = var.seconds
}

workload "b_alone" {
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.b
  sizes    = ["64KiB"]
  duration = var.seconds
}

# Together: the same two transfers, started at once by the group.
workload "a_together" {
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.a
  sizes    = ["64KiB"]
  duration = var.seconds
}

workload "b_together" {
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.b
  sizes    = ["64KiB"]
  duration = var.seconds
}

group "incast" {
  workloads = [workload.a_together, workload.b_together]
}
