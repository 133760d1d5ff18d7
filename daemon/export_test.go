package daemon

// HandedOver is the addresses of the listeners an upgrade would hand
// over.
func HandedOver(s *Listeners) []string {
	var out []string
	for _, l := range s.list {
		if _, ok := l.ln.(handable); ok {
			out = append(out, l.ln.Addr().String())
		}
	}
	return out
}
