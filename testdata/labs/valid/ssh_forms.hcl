lab "ssh-forms" {
  description = "Jump forms, nested ssh block, become, exec"
}

ssh {
  user        = "ops"
  port        = 2222
  known_hosts = "~/.ssh/known_hosts"
}

host "gw" {
  address = "gw.example.org"
  jump    = "admin@outer.example.org:2200"
}

host "a" {
  address = "10.1.0.1"
  jump    = host.gw
  ssh {
    user          = "root"
    identity_file = "~/.ssh/lab_key"
  }
}

host "b" {
  address = "10.1.0.2"
  jump    = host.gw
  become  = true
}

host "vm" {
  vm {
    image        = "/var/tmp/rlab-cache/custom.qcow2"
    memory       = "2GiB"
    cpus         = 2
    boot_timeout = "15m"
    network "rdma" {
      address = "10.99.0.3/24"
      mtu     = 9000
    }
    network "mgmt" {}
  }
}

workload "uptime_a" {
  tool    = "exec"
  host    = host.a
  command = ["uptime"]
}

workload "uptime_b" {
  tool    = "exec"
  host    = host.b
  command = ["uptime"]
  repeat  = 2
}

workload "tcp" {
  tool       = "tcp"
  server     = host.a
  client     = host.b
  duration   = "3s"
}

workload "vm_links" {
  tool    = "exec"
  host    = host.vm
  command = ["ip", "-br", "link"]
}
