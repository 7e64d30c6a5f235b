# Three local QEMU VMs on one data network (one L2 segment through the
# switch rlab runs for the run) at MTU 9000, so Soft-RoCE uses its largest
# MTU, 4096. First each node pings the next with 8972-byte pings that may
# not be fragmented (9000 minus the IPv4 and ICMP headers: the jumbo frames
# cross the segment whole); then the ring: every node writes to the next
# while it receives from the previous, all at once (group "ring"), with a
# capture on each node.
#
# Sized for TCG software emulation (no KVM): 3 s of RDMA WRITE per node.
lab "ring" {
  description = "Three local VMs on one network at MTU 9000: jumbo pings around the ring, then every node writes to the next at once (RDMA WRITE over Soft-RoCE), a RoCEv2 capture on each"
}

locals {
  # node => the node it writes to
  next = { n0 = "n1", n1 = "n2", n2 = "n0" }
  addr = { n0 = "10.99.0.1", n1 = "10.99.0.2", n2 = "10.99.0.3" }
}

host "node" {
  for_each = local.next
  vm {
    memory = "768MiB"
    network "ring" {
      address = "${local.addr[each.key]}/24"
      mtu     = 9000
    }
  }
}

rxe "node" {
  for_each = local.next
  host     = host.node[each.key]
  netdev   = "eth1"
}

workload "jumbo_ping" {
  for_each = local.next
  tool     = "exec"
  host     = host.node[each.key]
  command  = ["ping", "-M", "do", "-s", "8972", "-c", "3", "-W", "10", local.addr[each.value]]
}

workload "ring" {
  for_each = local.next
  tool     = "ib_write_bw"
  server   = rxe.node[each.value]
  client   = rxe.node[each.key]
  sizes    = ["64KiB"]
  duration = "3s"
}

group "ring" {
  workloads = [workload.ring]
}

capture "roce" {
  for_each = local.next
  host     = host.node[each.key]
  netdev   = "eth1"
  filter   = "udp port 4791"
  snaplen  = 128
  max_size = "16MiB"
  during   = [workload.ring]
}
