// Package openapi will generate the OpenAPI 3.1 documents of the broker's API
// (from the route table in api/wire) and of each server's tools.
//
// TODO(2026-11-30, issue 8 "The API as a contract"): not built yet. The
// package exists now so that its dependency rules bind from its first line.
package openapi
