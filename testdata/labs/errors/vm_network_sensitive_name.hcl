lab "t" {
  description = "error case: a network named by a sensitive value (it names files in the run folder: vm/net-NAME.switch.json)"
}
variable "token" {
  type      = string
  sensitive = true
  default   = "s3cret-token"
}
host "a" {
  count = 3
  vm {
    network "pair" {
      name    = "pair-${var.token}" # ERROR: Sensitive value in a network name
      address = "10.99.0.${count.index + 1}/24"
    }
  }
}
workload "w" {
  count   = 3
  tool    = "exec"
  host    = host.a[count.index]
  command = ["true"]
}
