//go:build !linux

package testenv

import "testing"

// Confined is Linux's only: elsewhere nothing is confined.
type Confined struct{}

// WatchConfined watches nothing here.
func WatchConfined(testing.TB, ...string) *Confined { return &Confined{} }

// Note notes nothing here.
func (*Confined) Note(int) {}

// Noted is 0 here.
func (*Confined) Noted() int { return 0 }
