# The capability lesson, with the project's own C programs (src/): an
# RDMA-CM server lends a buffer by putting its address and rkey in the CM
# private data of its REP (rdma_accept); the client RDMA WRITEs a pattern
# into it, READs it back and checks the READ returns what the WRITE put.
# The server's CPU takes no part in either: whoever holds address and rkey
# may read and write that memory.
#
# The capture shows the handshake (`rlab pcap`): the REP's private data
# decoded as "buffer addr 0x... rkey 0x... len 4096", then the WRITE First
# and the READ Request whose RETH carries that same address and rkey.
#
# Runs on rxe (Soft-RoCE). Run it with `rlab run labs/programs/write-read.hcl`.
lab "programs-write-read" {
  description = "Own verbs programs: RDMA-CM connect with address+rkey in the private data, RDMA WRITE then READ back (the READ returns what the WRITE put), with the CM handshake and the RETH in a capture"
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

# The sources beside this file, uploaded to each host and built there.
program "tutorial" {
  source = "src"
  build  = ["make", "server", "client"]
  packages = {
    debian = ["gcc", "make", "libibverbs-dev", "librdmacm-dev"]
    rhel   = ["gcc", "make", "rdma-core-devel"]
  }
}

workload "write_read" {
  tool    = "program"
  program = program.tutorial
  server  = rxe.server
  client  = rxe.client
  # The server lends 4096 bytes and exits once its client disconnects.
  server_command = ["./server", "${self.port}", "4096"]
  client_command = ["./client", self.server_address, "${self.port}"]
  ready          = "RDMA server listening on port"
  timeout        = "60s"

  metric "write_ok" { pattern = "^RDMA_WRITE complete" } # a count of matching lines
  metric "read_ok" { pattern = "^RDMA_READ matches" }

  expect {
    condition = result.write_ok == 1 && result.read_ok == 1
    message   = "the READ did not return what the WRITE put"
  }
}

# Whole packets (the CM MADs are 256 bytes; the REP's private data sits at
# their end), only RoCEv2, only while the pair runs.
capture "cm_and_data" {
  host     = host.server
  netdev   = "eth1"
  filter   = "udp port 4791"
  snaplen  = 512
  max_size = "16MiB"
  during   = [workload.write_read]
}
