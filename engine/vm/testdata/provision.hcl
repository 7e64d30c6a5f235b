# A quickstart-like lab for two stock hosts, what engine/vm TestE2EProvision
# runs on two VMs of the minimal image (sshd and sudo, no RDMA tools): the
# test points the hosts at the VMs, and rlab check, rlab provision and
# rlab run --provision install what it needs from Debian's registry. Sized
# for TCG: each workload runs a second or two.
lab "provision" {
  description = "Two stock Debian hosts: rxe, RDMA WRITE bandwidth, an RC pingpong and a RoCEv2 capture, after provisioning"
}

host "server" {
  address = "192.0.2.1"
}

host "client" {
  address = "192.0.2.2"
}

rxe "server" {
  host   = host.server
  netdev = "eth1"
}

rxe "client" {
  host   = host.client
  netdev = "eth1"
}

capture "roce" {
  host     = host.server
  netdev   = "eth1"
  filter   = "udp port 4791"
  snaplen  = 128
  max_size = "16MiB"
}

workload "write_bw" {
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.client
  sizes    = ["64KiB"]
  duration = "2s"
}

workload "rc_pingpong" {
  tool       = "ibv_rc_pingpong"
  server     = rxe.server
  client     = rxe.client
  sizes      = ["4KiB"]
  iterations = 100
}
