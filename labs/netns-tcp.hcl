# Hosts as network namespaces with their own sshd on this machine (the
# test bed of testdata/): no RDMA there, so a TCP transfer and commands.
# Make the bed, run, and remove it (root):
#   testdata/testbed/netns.sh up /tmp/rlab-netns 0 2 0
#   rlab run labs/netns-tcp.hcl
#   testdata/testbed/netns.sh down /tmp/rlab-netns
lab "netns-tcp" {
  description = "Two network-namespace hosts: TCP baseline and exec"
}

variable "user" {
  type        = string
  default     = "rlabbed"
  description = "Login user of the hosts: the test bed's user with passwordless sudo (testdata/testbed/netns.sh)"
}

variable "bed" {
  type        = string
  default     = "/tmp/rlab-netns"
  description = "The bed's folder (netns.sh up DIR ...): its login key and known_hosts"
}

variable "subnet" {
  type        = string
  default     = "10.200.0.0/17"
  description = "The bed's first subnet: 10.(200+IDX).0.0/17 for bed index IDX; its hosts are .10, .11, ..."
}

ssh {
  user          = var.user
  identity_file = "${var.bed}/id_ed25519"
  known_hosts   = "${var.bed}/known_hosts"
}

host "h" {
  count   = 2
  address = cidrhost(var.subnet, 10 + count.index)
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
