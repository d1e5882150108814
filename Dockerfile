# The dnsplane manager: a static binary on a distroless base, running as non-root.
#   make docker-build IMG=registry.example/dnsplane:v0.1.0
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/manager .

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/manager /manager
# 65532 is distroless's "nonroot" user; the embedded DNS server listens on an unprivileged port.
USER 65532:65532
ENTRYPOINT ["/manager"]
