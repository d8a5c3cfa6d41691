"""What tests share that is no test itself: stand-ins the package must not ship (a CPU
fake of CUPTI tracing), injected into perfdiff the way a caller would inject them."""
