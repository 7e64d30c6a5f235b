lab "t" {
  description = "error case: two network names that are one file name in the run folder"
}
host "a" {
  vm {
    network "pair" {
      name    = "pair-ana.b"
      address = "10.99.0.1/24"
    }
  }
}
host "b" { # ERROR: Conflicting network names
  vm {
    network "pair" {
      name    = "pair-ana_b"
      address = "10.99.0.2/24"
    }
  }
}
