#include "util/hash.h"

#include <gtest/gtest.h>

#include <string>

namespace kp {
namespace {

// FIPS 180-4 / NIST CSHS example vectors.
constexpr char kEmpty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr char kAbc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr char k448Bits[] = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
constexpr char kMillionA[] = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
constexpr char k448BitMessage[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

TEST(Sha256Test, StandardVectors) {
  EXPECT_EQ(sha256_hex(""), kEmpty);
  EXPECT_EQ(sha256_hex("abc"), kAbc);
  EXPECT_EQ(sha256_hex(k448BitMessage), k448Bits);
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), kMillionA);
}

TEST(Sha256Test, IncrementalMatchesOneShotForEveryChunkSize) {
  const std::string million(1000000, 'a');
  for (size_t chunk : {1, 3, 55, 56, 63, 64, 65, 1000, 4096}) {
    Sha256 hasher;
    for (size_t i = 0; i < million.size(); i += chunk) {
      hasher.update(std::string_view(million).substr(i, chunk));
    }
    EXPECT_EQ(hasher.hex_digest(), kMillionA) << "chunk size " << chunk;
  }
}

TEST(Sha256Test, PaddingBoundaries) {
  // Lengths around the 55/56/64-byte padding edges, checked incremental against one-shot and
  // against each other (no two lengths may collide).
  std::string previous;
  for (size_t n = 50; n <= 130; ++n) {
    std::string message(n, 'x');
    Sha256 hasher;
    hasher.update(message.substr(0, n / 2));
    hasher.update(message.substr(n / 2));
    std::string digest = hasher.hex_digest();
    EXPECT_EQ(digest, sha256_hex(message)) << "length " << n;
    EXPECT_NE(digest, previous);
    previous = digest;
  }
}

TEST(Sha256Test, DigestDoesNotFinalizeTheState) {
  Sha256 hasher;
  hasher.update("ab");
  EXPECT_EQ(hasher.hex_digest(), sha256_hex("ab"));
  hasher.update("c");
  EXPECT_EQ(hasher.hex_digest(), kAbc);
  EXPECT_EQ(hasher.hex_digest(), kAbc);
}

TEST(Sha256Test, EmptyUpdatesAndBinaryBytes) {
  Sha256 hasher;
  hasher.update("");
  EXPECT_EQ(hasher.hex_digest(), kEmpty);
  const std::string binary("\0\xff\x80\x01", 4);
  hasher.update(binary);
  EXPECT_EQ(hasher.hex_digest(), sha256_hex(binary));
  EXPECT_NE(sha256_hex(binary), sha256_hex(std::string_view("\0", 1)));
}

}  // namespace
}  // namespace kp
