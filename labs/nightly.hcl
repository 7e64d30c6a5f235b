# Nightly regression on a pair of CI VMs: rlab exits non-zero when a number
# falls below its threshold. Point it at the pair with
#   RLAB_VAR_server=... RLAB_VAR_client=... rlab run labs/nightly.hcl
lab "nightly" {
  description = "Nightly Soft-RoCE regression with expect thresholds"
}

variable "server" {
  type    = string
  default = "192.0.2.20"
}

variable "client" {
  type    = string
  default = "192.0.2.21"
}

variable "min_write_gbps" {
  type        = number
  default     = 1
  description = "Lowest acceptable RDMA WRITE average bandwidth, Gb/s"
  validation {
    condition     = var.min_write_gbps > 0
    error_message = "The bandwidth threshold must be positive."
  }
}

variable "max_write_lat_us" {
  type    = number
  default = 200
}

variable "min_tcp_gbps" {
  type        = number
  default     = 0.5
  description = "Below this the network itself is slow, whatever RDMA does"
}

variable "iterations" {
  type        = number
  default     = 2000
  description = "RDMA WRITE messages per size and repeat"
}

variable "lat_iterations" {
  type        = number
  default     = 5000
  description = "Round trips per repeat of the latency test"
}

variable "tcp_duration" {
  type        = string
  default     = "10s"
  description = "How long the TCP baseline sends"
}

ssh {
  user        = "ci"
  known_hosts = "~/.ssh/known_hosts"
}

host "server" {
  address = var.server
  become  = true
}

host "client" {
  address = var.client
  become  = true
}

rxe "server" {
  host   = host.server
  netdev = "eth1"
}

rxe "client" {
  host   = host.client
  netdev = "eth1"
}

workload "write_bw" {
  tool       = "ib_write_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = ["64KiB", "1MiB"]
  iterations = var.iterations
  repeat     = 3
  timeout    = "2m"
  expect {
    condition = result.bw_avg >= var.min_write_gbps
    message   = "RDMA WRITE bandwidth below ${var.min_write_gbps} Gb/s"
  }
}

workload "write_lat" {
  tool       = "ib_write_lat"
  server     = rxe.server
  client     = rxe.client
  sizes      = [64]
  iterations = var.lat_iterations
  repeat     = 3
  expect {
    condition = result.lat_typical <= var.max_write_lat_us
    message   = "RDMA WRITE latency above ${var.max_write_lat_us} us"
  }
  expect {
    condition = result.lat_p99 <= 4 * var.max_write_lat_us
    message   = "RDMA WRITE tail latency too high"
  }
}

workload "tcp" {
  tool     = "tcp"
  server   = host.server
  client   = host.client
  duration = var.tcp_duration
  expect {
    condition = result.tcp_bw > var.min_tcp_gbps
    message   = "TCP baseline below ${var.min_tcp_gbps} Gb/s: the network itself is slow"
  }
}
