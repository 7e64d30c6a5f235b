lab "t" {
  description = "error case"
}
host "a" {
  address = "192.0.2.1"
}
program "up" {
  source = "../valid/pingpair" # ERROR: Program source outside the lab
}
program "missing" {
  source = "nope" # ERROR: Cannot read program source
}
program "nobuild" {
  source   = "progsrc"
  build    = [] # ERROR: Empty build
  packages = { debain = ["gcc"], rhel = ["gcc --nogpgcheck"] } # ERROR: Unknown distribution family # ERROR: Invalid package name
}
workload "w" {
  tool    = "program"
  program = program.up
  host    = host.a
  command = ["./main"]
}
workload "x" {
  tool    = "program"
  program = program.missing
  host    = host.a
  command = ["./main"]
}
workload "y" {
  tool    = "program"
  program = program.nobuild
  host    = host.a
  command = ["./main"]
}
