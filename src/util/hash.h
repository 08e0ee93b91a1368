// SHA-256 (FIPS 180-4), written out here so that kernelpro needs no crypto library. Used for
// content addresses: the artifact cache key of a build, the hash of a candidate's source.
// Not for secrets: no constant-time guarantees.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kp {

// Returns the SHA-256 of `data` as 64 lowercase hex characters.
// Example: sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".
std::string sha256_hex(std::string_view data);

// Incremental SHA-256: feeding the bytes in any number of update() calls gives the same digest
// as sha256_hex() of their concatenation. Not thread-safe; one object per thread.
class Sha256 {
 public:
  Sha256();

  // Appends `data` to the message.
  void update(std::string_view data);

  // Returns the digest of everything passed to update() so far, as 64 lowercase hex
  // characters. Does not change the state: more update() calls may follow, and a later
  // hex_digest() covers those bytes too.
  std::string hex_digest() const;

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};  // the pending partial block
  size_t buffer_size_ = 0;            // bytes used in buffer_, always < 64
  uint64_t total_bytes_ = 0;          // message length so far
};

}  // namespace kp
