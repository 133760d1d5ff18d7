package pool

// TakenPorts lists the ports p's allocator holds, in order: what the
// tests of handed-over instances check.
func (p *Pool) TakenPorts() []int { return p.ports.Taken() }
