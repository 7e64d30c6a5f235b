lab "t" {
  description = "error case"
}
host "a" {
  address = "192.0.2.1"
}
host "b" {
  address = "192.0.2.2"
}
workload "x" {
  tool   = "tcp"
  server = host.a
  client = host.b
}
group "one" {
  workloads = [workload.x, workload.z] # ERROR: Reference to undeclared workload
}
