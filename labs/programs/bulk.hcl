# A bulk one-sided transfer timed against a TCP stream of the same size:
# src/bulk_client.c RDMA WRITEs var.bytes into the server's 4 MiB buffer in
# 4 MiB chunks (16 in flight) and prints
#
#   RDMA client wrote <bytes> bytes in <s> s (<x> MiB/s)
#
# which the metric turns into a MiB/s sample; rlab's tcp workload sends the
# same number of bytes. The summary's table puts them side by side. On
# Soft-RoCE both are CPU-bound copies, so the table shows what a software
# RDMA stack costs next to the kernel's TCP, not what a NIC does. Without
# KVM (TCG) keep var.bytes small: `rlab run -var bytes=67108864`.
#
lab "programs-bulk" {
  description = "Own verbs programs: a bulk RDMA WRITE of var.bytes in 4 MiB chunks, its MiB/s beside rlab's TCP transfer of the same size"
}

variable "bytes" {
  type        = number
  default     = 1073741824 # 1 GiB
  description = "How much each transfer moves (cut it for TCG: 67108864 moves in seconds)"
}

host "server" {
  vm {
    network "rdma" {
      address = "10.99.0.1/24"
    }
  }
}

host "client" {
  vm {
    network "rdma" {
      address = "10.99.0.2/24"
    }
  }
}

rxe "server" {
  host   = host.server
  netdev = "eth1"
}

rxe "client" {
  host   = host.client
  netdev = "eth1"
}

program "tutorial" {
  source = "src"
  build  = ["make", "server", "bulk_client"]
  packages = {
    debian = ["gcc", "make", "libibverbs-dev", "librdmacm-dev"]
    rhel   = ["gcc", "make", "rdma-core-devel"]
  }
}

workload "rdma_bulk" {
  tool           = "program"
  program        = program.tutorial
  server         = rxe.server
  client         = rxe.client
  server_command = ["./server", "${self.port}", "4M"]
  client_command = ["./bulk_client", self.server_address, "${self.port}", "${var.bytes}", "4M"]
  ready          = "RDMA server listening on port"
  timeout        = "30m"

  metric "mibps" {
    pattern = "^RDMA client wrote [0-9]+ bytes in [0-9.]+ s \\((?P<value>[0-9.]+) MiB/s\\)"
    unit    = "MiB/s"
    better  = "higher"
  }
}

workload "tcp_bulk" {
  tool   = "tcp"
  server = host.server
  client = host.client
  bytes  = var.bytes
}
