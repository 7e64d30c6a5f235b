lab "t" {
  description = "error case"
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
program "p" {
  source = "progsrc"
  build  = ["gcc", "-o", "main", "main.c"]
}
workload "no_client_command" { # ERROR: Missing client_command
  tool           = "program"
  program        = program.p
  server         = host.a
  client         = host.b
  server_command = ["./main", self.size] # ERROR: Unsupported attribute
  command        = ["./main"] # ERROR: Argument not valid here
  ready          = "listening(" # ERROR: Invalid ready
}
workload "host_devices" {
  tool           = "program"
  program        = program.p
  server         = host.a
  client         = host.b
  server_command = ["./main", self.server_device] # ERROR: Unsupported attribute
  client_command = ["./main", self.server_address]
  args           = ["-v"] # ERROR: Argument not valid for program
}
workload "no_program" { # ERROR: Missing program
  tool    = "program"
  host    = host.a
  command = ["./main", "${self.port}"]
}
workload "metrics" {
  tool           = "program"
  program        = program.p
  server         = rxe.a
  client         = rxe.b
  server_command = ["./main", self.server_device, "${self.gid_index}"]
  client_command = ["./main", self.server_address, self.client_device]
  metric "bw_avg" { pattern = "x" } # ERROR: Metric name taken
  metric "ok" { pattern = "(?P<value>" } # ERROR: Invalid pattern
  metric "ok" { pattern = "y" } # ERROR: Duplicate metric
  metric "Rate" { pattern = "z" } # ERROR: Invalid metric name
  metric "rate" {
    pattern = "(?P<value>[0-9]+)"
    better  = "more" # ERROR: Invalid better
  }
  expect {
    condition = result.speed > 1 # ERROR: Unsupported result attribute
  }
}
workload "perf" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
  metric "x" { pattern = "x" } # ERROR: Unsupported block type
}
