# The lab author's own programs: a folder beside the lab shipped to the
# hosts, built there, and run as a pair (server first, the client once the
# server prints "listening"), their numbers read by metric blocks; and one
# command on one host, and exec's metric blocks.
lab "program" {
  description = "own programs as workloads"
}

host "a" {
  address = "192.0.2.1"
}
host "b" {
  address = "192.0.2.2"
}
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}

program "pingpair" {
  source   = "pingpair"
  build    = ["make", "server", "client"]
  packages = { debian = ["gcc", "make"], rhel = ["gcc", "make"] }
}

workload "pair" {
  tool           = "program"
  program        = program.pingpair
  server         = host.a
  client         = host.b
  server_command = ["./server", "${self.port}", "-x"]
  client_command = ["./client", self.server_address, "${self.port}"]
  ready          = "listening"
  repeat         = 2
  metric "pongs" { pattern = "^got pong" }
  metric "mibps" {
    pattern = "in [0-9.]+ s \\((?P<value>[0-9.]+) MiB/s\\)"
    unit    = "MiB/s"
    better  = "higher"
  }
  expect {
    condition = result.pongs == 1 && result.mibps > 0
  }
}

workload "verbs" {
  tool           = "program"
  program        = program.pingpair
  server         = rxe.a
  client         = rxe.b
  sizes          = ["4KiB", "1MiB"]
  server_command = ["./server", "${self.port}", self.server_device]
  client_command = ["./client", self.server_address, "${self.port}", self.client_device, "${self.gid_index}", "${self.size}"]
}

workload "alone" {
  tool       = "program"
  program    = program.pingpair
  host       = host.a
  iterations = 10
  command    = ["./client", "localhost", "${self.port}", "${self.iterations}"]
}

workload "uptime" {
  tool    = "exec"
  host    = host.a
  command = ["cat", "/proc/uptime"]
  metric "uptime" {
    pattern = "^(?P<value>[0-9.]+) "
    unit    = "s"
  }
  expect {
    condition = result.uptime > 0
  }
}
