lab "t" {
  description = "error case: a block label is a literal; name = sets a network's name from each.key"
}
host "server" {
  for_each = toset(["ana", "bo"])
  vm {
    network "pair-${each.key}" { # ERROR: Invalid string literal
      address = "10.99.0.1/24"
    }
  }
}
