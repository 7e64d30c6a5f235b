lab "t" {
  description = "error case: a program that posts what siw refuses"
}
host "a" {
  address = "192.0.2.1"
}
host "b" {
  address = "192.0.2.2"
}
siw "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
rxe "c" {
  host   = host.a
  netdev = "eth2"
}
program "p" {
  source = "progsrc"
  build  = ["gcc", "-o", "main", "main.c"]
}
workload "imm_on_siw" {
  tool           = "program"
  program        = program.p
  server         = siw.a
  client         = rxe.b
  server_command = ["./main", "${self.port}"]
  client_command = ["./main", self.server_address, "${self.port}"]
  needs          = ["write_with_imm"] # ERROR: Not supported on iWARP
}
workload "atomics_on_siw" {
  tool           = "program"
  program        = program.p
  server         = rxe.b
  client         = siw.a
  server_command = ["./main", "${self.port}"]
  client_command = ["./main", self.server_address, "${self.port}"]
  needs          = ["atomics"] # ERROR: Not supported on iWARP
}
workload "imm_on_rxe" {
  tool           = "program"
  program        = program.p
  server         = rxe.c
  client         = rxe.b
  server_command = ["./main", "${self.port}"]
  client_command = ["./main", self.server_address, "${self.port}"]
  needs          = ["write_with_imm", "send_with_imm", "atomics"]
}
workload "between_hosts" {
  tool           = "program"
  program        = program.p
  server         = host.a
  client         = host.b
  server_command = ["./main", "${self.port}"]
  client_command = ["./main", self.server_address, "${self.port}"]
  needs          = ["atomics"]
}
workload "unknown_need" {
  tool    = "program"
  program = program.p
  host    = host.a
  command = ["./main"]
  needs   = ["write_imm"] # ERROR: Invalid needs
}
workload "not_a_list" {
  tool    = "program"
  program = program.p
  host    = host.a
  command = ["./main"]
  needs   = 3 # ERROR: Invalid needs
}
