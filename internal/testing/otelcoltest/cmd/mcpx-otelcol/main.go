// Command mcpx-otelcol is a minimal OpenTelemetry Collector for mcpx's tracing
// tests: an OTLP receiver (HTTP and gRPC) and an OTLP/HTTP exporter, so a
// test reads back, as OTLP JSON, exactly the spans the collector received.
// It is its own module so that the collector's dependencies stay out of
// mcpx's go.mod.
package main

import (
	"context"
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry"
	"go.uber.org/zap"
)

// version is what --version prints; .ci/run reinstalls a collector that
// prints another. Raise it with any change to this module.
const version = "v0.165.0-mcpx2"

func components() (otelcol.Factories, error) {
	// The collector's own telemetry: logs to stderr, no metrics or traces
	// (otelconftelemetry would link a Kubernetes client for its resource
	// detectors: minutes of build for nothing here).
	f := otelcol.Factories{Telemetry: telemetry.NewFactory(func() component.Config { return &struct{}{} },
		telemetry.WithCreateLogger(func(context.Context, telemetry.LoggerSettings, component.Config) (*zap.Logger, component.ShutdownFunc, error) {
			l, err := zap.NewProduction()
			return l, nil, err
		}))}
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](otlphttpexporter.NewFactory()); err != nil {
		return f, err
	}
	return f, nil
}

func main() {
	info := component.BuildInfo{Command: "mcpx-otelcol", Description: "mcpx test collector", Version: version}
	set := otelcol.CollectorSettings{
		BuildInfo: info,
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), yamlprovider.NewFactory()},
				DefaultScheme:     "file",
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatal(err)
	}
}
