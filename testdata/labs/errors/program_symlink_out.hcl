lab "t" {
  description = "error case"
}
host "a" {
  address = "192.0.2.1"
}
program "p" {
  source = "progsym" # ERROR: Symlink out of the program source
  build  = ["gcc", "-o", "main", "main.c"]
}
workload "w" {
  tool    = "program"
  program = program.p
  host    = host.a
  command = ["./main"]
}
