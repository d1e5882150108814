# The manager image users build: a static binary on a distroless base, running as non-root.
#   make docker-build IMG=registry.example/dnsplane:v0.1.0
# (which passes VERSION and REVISION from git; docs/image.md). Containerfile.scratch is the same
# image built here without a registry (`make image`): same binary flags, user and entrypoint.
FROM golang:1.26 AS build
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
    -ldflags="-s -w -X github.com/dnsplane/dnsplane/internal/version.Version=${VERSION} -X github.com/dnsplane/dnsplane/internal/version.Revision=${REVISION}" \
    -o /out/manager .

FROM gcr.io/distroless/static:nonroot
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="dnsplane manager" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/manager /manager
# 65532 is distroless's "nonroot" user; the embedded DNS server listens on an unprivileged port.
USER 65532:65532
ENTRYPOINT ["/manager"]
