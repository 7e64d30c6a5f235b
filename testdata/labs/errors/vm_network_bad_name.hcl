lab "t" {
  description = "error case: a templated network name that is no file name, one error for all instances"
}
host "server" {
  for_each = toset(["ana/1", "bo/2", "cy/3"])
  vm {
    network "pair" {
      name    = "pair-${each.key}" # ERROR: Invalid network name
      address = "10.99.0.1/24"
    }
  }
}
host "client" {
  vm {
    network "pair" {
      name    = "" # ERROR: Invalid network name
      address = "10.99.0.2/24"
    }
    network "lab" {
      name = 12
    }
    network "other" {
      name = "12" # ERROR: Duplicate network
    }
    network "x" {
      name = ["a"] # ERROR: Incorrect attribute value type
    }
  }
}
