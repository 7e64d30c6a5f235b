# The lab of engine/vm TestE2EExampleLabs/impair-interrupt: a netem on each
# VM's data NIC, in force during a TCP transfer far longer than the test lets
# it run, so the run is interrupted (Ctrl-C) or killed (SIGKILL) while both
# impairments and both rxe devices are in place. The test points the hosts
# at the VMs (retarget) as it does the examples of labs/.
lab "impair-hold" {
  description = "netem on both ends of one link during a long TCP transfer, to be interrupted"
}

variable "seconds" {
  type    = string
  default = "10m"
}

host "server" {
  address = "192.0.2.10"
}

host "client" {
  address = "192.0.2.11"
}

rxe "server" {
  host   = host.server
  netdev = "eth1"
}

rxe "client" {
  host   = host.client
  netdev = "eth1"
}

workload "hold" {
  tool     = "tcp"
  server   = host.server
  client   = host.client
  duration = var.seconds
  timeout  = "15m"
}

impair "server" {
  host   = host.server
  netdev = "eth1"
  delay  = "1ms"
  during = [workload.hold]
}

impair "client" {
  host   = host.client
  netdev = "eth1"
  loss   = "1%"
  during = [workload.hold]
}
