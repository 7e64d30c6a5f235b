# A class on one machine: for each student a pair of local VMs on the
# student's own network, Soft-RoCE on both, RDMA WRITE bandwidth and an RC
# pingpong, and a capture of the pair's RoCEv2 traffic.
#
# Each pair's network is named from the student's key (`name` in the
# network block: a block label is a literal in HCL), so every pair is its
# own L2 segment: a student's VMs see none of another pair's frames, and
# every pair can use the same addresses. `rlab plan` says what the class
# costs this machine (VMs, memory, CPUs); with more students than fit,
# shrink `memory` or run part of the class with --only.
lab "class-vms" {
  description = "For each student: two local VMs on their own network, rxe on both, WRITE bandwidth, RC pingpong, a capture of their pair only"
}

variable "students" {
  type        = list(string)
  default     = ["ana", "bo", "cy"]
  description = "Student keys: each gets a server and a client VM on network pair-<key>"
}

host "server" {
  for_each = toset(var.students)
  vm {
    network "pair" {
      name    = "pair-${each.key}"
      address = "10.99.0.1/24"
    }
  }
}

host "client" {
  for_each = toset(var.students)
  vm {
    network "pair" {
      name    = "pair-${each.key}"
      address = "10.99.0.2/24"
    }
  }
}

rxe "server" {
  for_each = toset(var.students)
  host     = host.server[each.key]
  netdev   = "eth1"
}

rxe "client" {
  for_each = toset(var.students)
  host     = host.client[each.key]
  netdev   = "eth1"
}

capture "roce" {
  for_each = toset(var.students)
  host     = host.server[each.key]
  netdev   = "eth1"
  filter   = "udp port 4791"
  snaplen  = 128
  max_size = "16MiB"
}

workload "write_bw" {
  for_each = toset(var.students)
  tool     = "ib_write_bw"
  server   = rxe.server[each.key]
  client   = rxe.client[each.key]
  sizes    = ["64KiB"]
  duration = "3s"
}

workload "pingpong" {
  for_each   = toset(var.students)
  tool       = "ibv_rc_pingpong"
  server     = rxe.server[each.key]
  client     = rxe.client[each.key]
  iterations = 300
}
