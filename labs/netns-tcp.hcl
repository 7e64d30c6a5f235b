# Hosts as network namespaces with their own sshd on this machine (the
# test bed of testdata/): no RDMA there, so a TCP transfer and commands.
lab "netns-tcp" {
  description = "Two network-namespace hosts: TCP baseline and exec"
}

variable "user" {
  type        = string
  default     = "rlabbed"
  description = "Login user of the hosts: the test bed's user with passwordless sudo (testdata/testbed/netns.sh)"
}

variable "known_hosts" {
  type    = string
  default = "/tmp/rlab-netns/known_hosts"
}

ssh {
  user          = var.user
  identity_file = "/tmp/rlab-netns/id_ed25519"
  known_hosts   = var.known_hosts
}

host "h" {
  count   = 2
  address = cidrhost("10.200.0.0/24", count.index + 1)
}

workload "addrs" {
  tool    = "exec"
  host    = host.h[0]
  command = ["ip", "-br", "addr"]
}

workload "tcp" {
  tool   = "tcp"
  server = host.h[0]
  client = host.h[1]
  bytes  = "64MiB"
}
