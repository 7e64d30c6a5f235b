# A cloud pair reachable only through a bastion host (ProxyJump): rlab
# connects to the bastion, then through it to each VM's private address.
lab "cloud-bastion" {
  description = "Two cloud VMs behind a bastion: Soft-RoCE WRITE bandwidth and a TCP baseline"
}

variable "bastion" {
  type    = string
  default = "203.0.113.10"
}

variable "private_addresses" {
  type = map(string)
  default = {
    server = "10.0.1.10"
    client = "10.0.1.11"
  }
}

variable "netdev" {
  type        = string
  default     = "ens5"
  description = "The VMs' private NIC, where rxe and the capture go"
}

variable "duration" {
  type        = string
  default     = "20s"
  description = "How long ib_write_bw runs"
}

variable "tcp_bytes" {
  type        = string
  default     = "2GiB"
  description = "How much the TCP baseline sends"
}

variable "qps" {
  type    = number
  default = 2
}

ssh {
  user          = "ubuntu"
  identity_file = "~/.ssh/cloud_ed25519"
  known_hosts   = "~/.ssh/known_hosts"
  jump          = host.bastion
}

host "bastion" {
  address = var.bastion
}

host "server" {
  address = var.private_addresses["server"]
  become  = true
}

host "client" {
  address = var.private_addresses["client"]
  become  = true
}

rxe "server" {
  host   = host.server
  netdev = var.netdev
}

rxe "client" {
  host   = host.client
  netdev = var.netdev
}

capture "roce" {
  host   = host.client
  netdev = var.netdev
  filter = "udp port 4791"
}

workload "write_bw" {
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.client
  duration = var.duration
  qps      = var.qps
}

workload "tcp" {
  tool   = "tcp"
  server = host.server
  client = host.client
  bytes  = var.tcp_bytes
}
