//go:generate go -C ../tools tool mdatagen ../flamehouseexporter/metadata.yaml

package flamehouseexporter
