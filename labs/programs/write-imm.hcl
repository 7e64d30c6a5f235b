# RDMA WRITE with immediate data: the one-sided write the other side hears
# about. The server (src/server.c) posts one receive before it accepts; the
# client (src/imm_client.c) writes a pattern with IBV_WR_RDMA_WRITE_WITH_IMM.
# The data lands where the RETH says, like a plain WRITE, and the 32-bit
# immediate travels in the ImmDt header of the WRITE's last packet, consumes
# the posted receive and arrives in the server's completion after the data:
# a "ready" signal for a rendezvous without a separate SEND. The server
# prints "RDMA server got immediate 0x1234abcd (4096 bytes written)" and
# checks the bytes.
#
# rxe only. siw (soft-iWARP) cannot run this: iWARP has no immediate data,
# and rdma-core's siw provider refuses IBV_WR_RDMA_WRITE_WITH_IMM when the
# work request is posted (ibv_post_send fails), as it refuses the atomics
# (siw reports atomic_cap 0). perftest's --write_with_imm is refused on siw
# at validate for the same reason.
#
# The capture shows the RDMA WRITE Last (or Only) with Immediate and its
# ImmDt, and the REP's private data naming the buffer the RETH writes.
lab "programs-write-imm" {
  description = "Own verbs programs: RDMA WRITE with immediate data into a posted receive; the server prints the immediate; the capture shows ImmDt (rxe only: siw refuses WRITE_WITH_IMM at post time)"
}

variable "imm" {
  type        = string
  default     = "0x1234abcd"
  description = "The 32-bit immediate the client sends"
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
  build  = ["make", "server", "imm_client"]
  packages = {
    debian = ["gcc", "make", "libibverbs-dev", "librdmacm-dev"]
    rhel   = ["gcc", "make", "rdma-core-devel"]
  }
}

workload "write_imm" {
  tool           = "program"
  program        = program.tutorial
  server         = rxe.server
  client         = rxe.client
  server_command = ["./server", "${self.port}", "4096"]
  client_command = ["./imm_client", self.server_address, "${self.port}", var.imm]
  ready          = "RDMA server listening on port"
  needs          = ["write_with_imm"] # refused at validate on a siw device
  timeout        = "60s"

  metric "imm_sent" { pattern = "^RDMA_WRITE_WITH_IMM complete" }
  # The server's lines (from = "server"): the immediate arrived, and after
  # the data.
  metric "imm_received" {
    pattern = "^RDMA server got immediate ${var.imm} "
    from    = "server"
  }
  metric "imm_data_ok" {
    pattern = "^immediate data matches"
    from    = "server"
  }

  expect {
    condition = result.imm_sent == 1 && result.imm_received == 1 && result.imm_data_ok == 1
    message   = "the immediate did not arrive with the data"
  }
}

capture "imm" {
  host     = host.server
  netdev   = "eth1"
  filter   = "udp port 4791"
  snaplen  = 512
  max_size = "16MiB"
  during   = [workload.write_imm]
}
