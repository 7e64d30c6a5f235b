lab "t" {
  description = "error case: a metric from the server of a workload that runs one command"
}
host "a" {
  address = "192.0.2.1"
}
workload "up" {
  tool    = "exec"
  host    = host.a
  command = ["cat", "/proc/uptime"]
  metric "up" {
    pattern = "^(?P<value>[0-9.]+) "
    from    = "server" # ERROR: No server here
  }
}
