// Package clientgen will turn tool JSON Schemas into TypeScript and generate
// the typed script client module, with the types, catalog and search views.
//
// TODO(2026-11-30, issue 9 "Generated TypeScript script clients"): not built
// yet. The package exists now so that its dependency rules bind from its
// first line.
package clientgen
