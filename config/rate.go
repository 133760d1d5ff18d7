package config

import (
	"fmt"

	"mcpx.dev/mcpx/auth/rights"
)

// rateWant is what a rate field takes, for type errors.
const rateWant = "a rate string, " + rights.RateForm

// checkServerLimits checks a server's rate, burst and maxConcurrent.
func (p *problems) checkServerLimits(name string, s *Server) {
	p.checkBurst(name, "burst", s.Burst, s.Rate, "rate")
	if s.MaxConcurrent < 0 {
		p.add(name, "maxConcurrent", fmt.Sprintf("maxConcurrent is %d", s.MaxConcurrent),
			"use a positive number of calls that may run at once, or leave it out for no limit")
	}
}

// checkBurst refuses a negative burst, or one without its rate.
func (p *problems) checkBurst(server, field string, burst int, rate rights.Rate, rateField string) {
	switch {
	case burst < 0:
		p.add(server, field, fmt.Sprintf("%s is %d", field, burst), "use a positive number of calls, or leave it out for the rate's count")
	case burst > 0 && rate.IsZero():
		p.add(server, field, fmt.Sprintf("%s %d without %s", field, burst, rateField),
			fmt.Sprintf("set %s too, %s", rateField, rights.RateForm))
	}
}
