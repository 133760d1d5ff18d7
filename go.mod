module mcpx.dev/mcpx

go 1.26.8

require (
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	github.com/oklog/run v1.2.0 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
)
