package io.kvindex.hash;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvindex.event.ExtraKey;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import net.openhft.hashing.LongTupleHashFunction;
import org.junit.jupiter.api.Test;

/**
 * Golden values: the base chain is vLLM's own (llm-d test data). The other expected chains were
 * computed independently of this code, in Python with cbor2 5.4.6 ({@code canonical=True}), hashlib
 * and python-xxhash 3.0.0 (xxHash 0.8.1), following vLLM's {@code hash_block_tokens} and {@code
 * generate_block_hash_extra_keys} step by step.
 */
class BlockHasherTest {
  private static final int[] TOKENS = GoldenVectors.tokens();
  private static final BlockHasher SHA256 =
      BlockHasher.create(HashAlgorithm.SHA256_CBOR, GoldenVectors.SEED, GoldenVectors.BLOCK_SIZE);

  private static long[] unsigned(String csv) {
    return Arrays.stream(csv.split(",")).mapToLong(Long::parseUnsignedLong).toArray();
  }

  private static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }

  private static int[] tokens(int count) {
    return Arrays.copyOf(TOKENS, count);
  }

  @Test
  void goldenTokens_resource_has400Ids() {
    assertThat(TOKENS).hasSize(400).startsWith(2082, 1113, 2142).endsWith(476, 8621);
  }

  @Test
  void blockHashes_goldenBase_matchVllmExactly() {
    assertThat(SHA256.blockHashes(TOKENS)).containsExactly(GoldenVectors.baseHashes());
  }

  @Test
  void blockHashes_noneInputs_sameAsWithoutInputs() {
    assertThat(SHA256.blockHashes(TOKENS, BlockHashInputs.none()))
        .containsExactly(GoldenVectors.baseHashes());
    assertThat(SHA256.blockHashes(TOKENS, BlockHashInputs.builder().build()))
        .containsExactly(GoldenVectors.baseHashes());
  }

  @Test
  void noneHash_seed42_isSha256OfCborText() {
    assertThat(hex(SHA256.noneHash()))
        .isEqualTo("9fa6eb003f14425eb9c8e6baacfbcaab26257357b829c7bfa74ffcc4f31c1780");
  }

  @Test
  void noneHash_seed0_matchesReference() {
    BlockHasher hasher = BlockHasher.create(HashAlgorithm.SHA256_CBOR, "0", 16);
    assertThat(hex(hasher.noneHash()))
        .isEqualTo("4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e");
  }

  @Test
  void chain_block0_fullDigestIsChained() {
    BlockChain chain = SHA256.chain(tokens(16), BlockHashInputs.none());
    assertThat(hex(chain.lastDigest()))
        .isEqualTo("7235f837d217eb40003197e4e27040edecc66c7d7fe49f86f5b600d19aef97ac");
    assertThat(Long.toUnsignedString(chain.hash(0))).isEqualTo("17705339885301241772");
    assertThat(chain.firstBlock()).isZero();
    assertThat(chain.nextBlock()).isEqualTo(1);
  }

  @Test
  void chain_block0_digestIsSha256OfHandWrittenCbor() throws Exception {
    byte[] cbor = new byte[3 + 32 + 1 + 16 * 5 + 1];
    int at = 0;
    cbor[at++] = (byte) 0x83;
    cbor[at++] = 0x58;
    cbor[at++] = 0x20;
    System.arraycopy(SHA256.noneHash(), 0, cbor, at, 32);
    at += 32;
    cbor[at++] = (byte) 0x90;
    for (int i = 0; i < 16; i++) {
      int token = TOKENS[i];
      if (token < 24) {
        cbor[at++] = (byte) token;
      } else if (token < 256) {
        cbor[at++] = 0x18;
        cbor[at++] = (byte) token;
      } else if (token < 65536) {
        cbor[at++] = 0x19;
        cbor[at++] = (byte) (token >> 8);
        cbor[at++] = (byte) token;
      } else {
        cbor[at++] = 0x1a;
        for (int shift = 24; shift >= 0; shift -= 8) {
          cbor[at++] = (byte) (token >> shift);
        }
      }
    }
    cbor[at++] = (byte) 0xf6;
    assertThat(hex(Arrays.copyOf(cbor, 8))).isEqualTo("8358209fa6eb003f");
    byte[] expected = MessageDigest.getInstance("SHA-256").digest(Arrays.copyOf(cbor, at));
    assertThat(SHA256.chain(tokens(16), BlockHashInputs.none()).lastDigest()).isEqualTo(expected);
  }

  @Test
  void blockHashes_partialTail_ignored() {
    assertThat(SHA256.blockHashes(tokens(399)))
        .containsExactly(Arrays.copyOf(GoldenVectors.baseHashes(), 24));
    assertThat(SHA256.blockHashes(tokens(15))).isEmpty();
    assertThat(SHA256.blockHashes(new int[0])).isEmpty();
  }

  @Test
  void blockHashes_loraName_changesEveryHash() {
    long[] lora = SHA256.blockHashes(TOKENS, BlockHashInputs.builder().loraName("Alice").build());
    assertThat(lora)
        .containsExactly(
            unsigned(
                "9643097150530800701,11170191873018355659,6527130464540768062,5266282249679428495,841584138981164017,2167863935422872178,10047306778055275762,9832566306835575616,13152907232236974528,16406591261347721627,7927681126437370465,14102553466237340935,12688422695725635668,60694021523729386,1853251211306187455,15753609530196991075,8654018951238099208,18153899847325680392,9504216802721532657,9589072771426370715,17521139068014238504,17360094881635091534,18205002777866313257,16504313431429417684,8548534288577952324"));
    long[] base = GoldenVectors.baseHashes();
    for (int i = 0; i < base.length; i++) {
      assertThat(lora[i]).as("block %d", i).isNotEqualTo(base[i]);
    }
  }

  @Test
  void blockHashes_cacheSalt_onBlock0ChangesEveryLaterHash() {
    long[] salted =
        SHA256.blockHashes(TOKENS, BlockHashInputs.builder().cacheSalt("s3cret").build());
    assertThat(salted)
        .containsExactly(
            unsigned(
                "1303094478010696926,14072906123950573776,5999708520295972333,17173515216256203626,14268829283803056291,7945807022389536750,6756867099227284116,12910454664290820348,11656853995796651743,11612350344674000874,909664035369592109,10037539606754747055,410164361385896015,17213274345635495237,3572381330445816120,17074214950922054949,9133353308714027208,9457669063610090988,17072355904394472249,4591851520285117708,15315412638515757423,8320793219355762473,3952846805431263797,11016057431063649466,17657040325571248487"));
    long[] base = GoldenVectors.baseHashes();
    for (int i = 0; i < base.length; i++) {
      assertThat(salted[i]).as("block %d", i).isNotEqualTo(base[i]);
    }
  }

  @Test
  void extend_cacheSaltPastBlock0_hasNoEffect() {
    BlockChain first = SHA256.chain(tokens(16), BlockHashInputs.none());
    BlockChain rest =
        SHA256.extend(
            first,
            Arrays.copyOfRange(TOKENS, 16, 400),
            BlockHashInputs.builder().cacheSalt("s3cret").build());
    assertThat(rest.firstBlock()).isEqualTo(1);
    assertThat(rest.hashes())
        .containsExactly(Arrays.copyOfRange(GoldenVectors.baseHashes(), 1, 25));
  }

  @Test
  void blockHashes_emptyCacheSalt_likeNoSalt() {
    assertThat(SHA256.blockHashes(TOKENS, BlockHashInputs.builder().cacheSalt("").build()))
        .containsExactly(GoldenVectors.baseHashes());
  }

  @Test
  void blockHashes_otherBlockSizes_matchReference() {
    BlockHasher seven = BlockHasher.create(HashAlgorithm.SHA256_CBOR, "42", 7);
    assertThat(seven.blockHashes(tokens(50)))
        .containsExactly(
            unsigned(
                "15326199421448414005,3509931663151137276,802474734666708960,7295193420331246299,16974313105832384401,7976918304618366507,9602885714219047967"));
    BlockHasher one = BlockHasher.create(HashAlgorithm.SHA256_CBOR, "0", 1);
    assertThat(one.blockHashes(tokens(5)))
        .containsExactly(
            unsigned(
                "13541936501406431698,6867593908884878757,388538370647306115,17236360231606146701,5720008311274510621"));
  }

  @Test
  void blockHashes_tokenIdsAtEncodingEdges_matchReference() {
    int[] edges = {0, 23, 24, 255, 256, 65535, 65536, Integer.MAX_VALUE};
    int[] block = new int[16];
    System.arraycopy(edges, 0, block, 0, 8);
    System.arraycopy(edges, 0, block, 8, 8);
    BlockHasher hasher = BlockHasher.create(HashAlgorithm.SHA256_CBOR, "7", 16);
    assertThat(hasher.blockHashes(block)).containsExactly(unsigned("7830939704296780816"));
  }

  private static BlockHashInputs.Builder multimodal() {
    // imgA spans blocks 0-1, imgB sits inside block 1, imgC starts in block 2 and runs into
    // block 4, so blocks 3 and 4 see it at a negative offset. Added out of order on purpose.
    return BlockHashInputs.builder()
        .multimodal("imgC", 40, 30)
        .multimodal("imgA", 5, 20)
        .multimodal("imgB", 25, 3);
  }

  private static List<byte[]> embedsDigests() throws Exception {
    List<byte[]> digests = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      digests.add(MessageDigest.getInstance("SHA-256").digest(new byte[] {(byte) i}));
    }
    return digests;
  }

  @Test
  void blockHashes_multimodal_offsetsRelativeToBlockStart() {
    assertThat(SHA256.blockHashes(tokens(96), multimodal().build()))
        .containsExactly(
            unsigned(
                "7417589905942260571,14137694321052338745,17225025881968712182,4966561727965934103,4851594556583934155,10253428823437818734"));
  }

  @Test
  void blockHashes_promptEmbedsDigests_perBlock() throws Exception {
    BlockHashInputs inputs = BlockHashInputs.builder().promptEmbedsDigests(embedsDigests()).build();
    assertThat(SHA256.blockHashes(tokens(64), inputs))
        .containsExactly(
            unsigned(
                "12336336215017974341,10266546791368404578,1876090486351323636,4546564515022030012"));
  }

  @Test
  void blockHashes_allExtraKeys_inVllmOrder() throws Exception {
    BlockHashInputs inputs =
        multimodal().loraName("Alice").cacheSalt("s").promptEmbedsDigests(embedsDigests()).build();
    assertThat(SHA256.blockHashes(tokens(96), inputs))
        .containsExactly(
            unsigned(
                "3980648191447718039,1477248047779677367,8312398208002104107,1397124575597307412,18086382119852525497,15406446845561629799"));
    BlockHasher xxhash = BlockHasher.create(HashAlgorithm.XXHASH_CBOR, "42", 16);
    assertThat(xxhash.blockHashes(tokens(96), inputs))
        .containsExactly(
            unsigned(
                "3917773311969691564,3434139432025799428,1502322704395090056,2619174891294748508,5398583688073452933,14733190044413443549"));
  }

  @Test
  void blockHashes_olderEngineKeyFormats_loraIdAndBareIdentifiers() {
    // Engines before v0.11.1 hashed the LoRA int id and, before v0.18, bare mm identifiers.
    // imgA ends exactly at the block 0/1 boundary: only block 0 includes it.
    BlockHashInputs inputs =
        BlockHashInputs.builder()
            .loraId(3)
            .multimodalIdentifiersOnly()
            .multimodal("imgA", 5, 11)
            .multimodal("imgB", 25, 3)
            .multimodal("imgC", 40, 30)
            .build();
    assertThat(SHA256.blockHashes(tokens(96), inputs))
        .containsExactly(
            unsigned(
                "4262628861171098922,17103734544586211878,4159197505931348206,2848287230440379195,11016943104619242757,7655618594979109969"));
    BlockHasher legacy = BlockHasher.create(HashAlgorithm.SHA256_CBOR_64BIT, "42", 16);
    assertThat(legacy.blockHashes(tokens(96), inputs))
        .containsExactly(
            unsigned(
                "8711321525242057573,16131833035400283399,3073529184080014167,6871112407065903213,12726745071339204641,8425241015990875752"));
  }

  @Test
  void build_loraNameAndLoraId_rejected() {
    assertThatThrownBy(() -> BlockHashInputs.builder().loraName("a").loraId(1).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not both");
  }

  @Test
  void blockHashes_explicitExtraKeys_sameAsDerived() throws Exception {
    List<byte[]> embeds = embedsDigests();
    List<List<ExtraKey>> keys = new ArrayList<>();
    ExtraKey lora = new ExtraKey.Text("Alice");
    keys.add(
        List.of(
            lora,
            new ExtraKey.Multimodal("imgA", 5),
            new ExtraKey.Text("s"),
            new ExtraKey.Digest(embeds.get(0))));
    keys.add(
        List.of(
            lora,
            new ExtraKey.Multimodal("imgA", -11),
            new ExtraKey.Multimodal("imgB", 9),
            new ExtraKey.Digest(embeds.get(1))));
    keys.add(List.of(lora, new ExtraKey.Multimodal("imgC", 8), new ExtraKey.Digest(embeds.get(2))));
    keys.add(List.of(lora, new ExtraKey.Multimodal("imgC", -8)));
    keys.add(List.of(lora, new ExtraKey.Multimodal("imgC", -24)));
    keys.add(List.of(lora));
    assertThat(SHA256.blockHashes(tokens(96), keys))
        .containsExactly(
            unsigned(
                "3980648191447718039,1477248047779677367,8312398208002104107,1397124575597307412,18086382119852525497,15406446845561629799"));
  }

  @Test
  void blockHashes_explicitNullOrEmptyKeys_likeNone() {
    List<List<ExtraKey>> keys = new ArrayList<>();
    keys.add(null);
    keys.add(List.of());
    assertThat(SHA256.blockHashes(tokens(32), keys))
        .containsExactly(Arrays.copyOf(GoldenVectors.baseHashes(), 2));
  }

  @Test
  void blockHashes_explicitKeysTooFew_rejected() {
    assertThatThrownBy(() -> SHA256.blockHashes(tokens(32), List.of(List.of())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("one entry");
  }

  @Test
  void extend_inPieces_sameAsWholeChain() {
    BlockChain head = SHA256.chain(tokens(160), BlockHashInputs.none());
    BlockChain tail =
        SHA256.extend(head, Arrays.copyOfRange(TOKENS, 160, 400), BlockHashInputs.none());
    long[] whole = GoldenVectors.baseHashes();
    assertThat(head.hashes()).containsExactly(Arrays.copyOf(whole, 10));
    assertThat(tail.firstBlock()).isEqualTo(10);
    assertThat(tail.hashes()).containsExactly(Arrays.copyOfRange(whole, 10, 25));
  }

  @Test
  void extend_resumedFromStoredDigest_continuesChain() {
    byte[] digest = SHA256.chain(tokens(32), BlockHashInputs.none()).lastDigest();
    BlockChain resumed = BlockChain.resume(HashAlgorithm.SHA256_CBOR, digest, 2);
    BlockChain next =
        SHA256.extend(resumed, Arrays.copyOfRange(TOKENS, 32, 48), BlockHashInputs.none());
    assertThat(next.hashes()).containsExactly(GoldenVectors.baseHashes()[2]);
  }

  @Test
  void extend_multimodalAcrossPieces_sameAsWholeChain() {
    BlockHashInputs inputs = multimodal().build();
    BlockChain head = SHA256.chain(tokens(48), inputs);
    BlockChain tail = SHA256.extend(head, Arrays.copyOfRange(TOKENS, 48, 96), inputs);
    long[] expected =
        unsigned(
            "7417589905942260571,14137694321052338745,17225025881968712182,4966561727965934103,4851594556583934155,10253428823437818734");
    assertThat(head.hashes()).containsExactly(Arrays.copyOf(expected, 3));
    assertThat(tail.hashes()).containsExactly(Arrays.copyOfRange(expected, 3, 6));
  }

  @Test
  void extend_chainOfOtherAlgorithm_rejected() {
    BlockHasher xxhash = BlockHasher.create(HashAlgorithm.XXHASH_CBOR, "42", 16);
    assertThatThrownBy(() -> SHA256.extend(xxhash.start(), TOKENS, BlockHashInputs.none()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("xxhash_cbor");
  }

  @Test
  void resume_wrongDigestLength_rejected() {
    assertThatThrownBy(() -> BlockChain.resume(HashAlgorithm.SHA256_CBOR, new byte[16], 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("32 bytes");
  }

  @Test
  void blockHashes_negativeToken_rejected() {
    int[] tokens = tokens(16);
    tokens[3] = -1;
    assertThatThrownBy(() -> SHA256.blockHashes(tokens))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tokenIds[3]");
  }

  @Test
  void create_blockSizeZero_rejected() {
    assertThatThrownBy(() -> BlockHasher.create(HashAlgorithm.SHA256_CBOR, "42", 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("blockSize");
  }

  @Test
  void fromVllmName_unknown_listsAcceptedNames() {
    assertThat(HashAlgorithm.fromVllmName("SHA256_CBOR")).isEqualTo(HashAlgorithm.SHA256_CBOR);
    assertThat(HashAlgorithm.fromVllmName("sha256")).isEqualTo(HashAlgorithm.SHA256);
    assertThatThrownBy(() -> HashAlgorithm.fromVllmName("builtin"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sha256, sha256_cbor, sha256_cbor_64bit, xxhash, xxhash_cbor");
  }

  @Test
  void create_noSeed_usesVllmDefaultSeedForSha256Forms() {
    for (HashAlgorithm algorithm : List.of(HashAlgorithm.SHA256, HashAlgorithm.SHA256_CBOR)) {
      BlockHasher unset = BlockHasher.create(algorithm, null, 16);
      assertThat(unset.seed()).isEqualTo("vllm-none-hash");
      assertThat(unset.blockHashes(TOKENS))
          .containsExactly(BlockHasher.create(algorithm, "vllm-none-hash", 16).blockHashes(TOKENS));
    }
    // vLLM's own reference digest of NONE_HASH for sha256 with no PYTHONHASHSEED
    assertThat(hex(BlockHasher.create(HashAlgorithm.SHA256, null, 16).noneHash()))
        .isEqualTo("066b1e8987e027138e98701c46128929378935f9b6cd1549105ae6b4f0d71198");
  }

  @Test
  void create_noSeed_xxhashFormsRefusedWithWhatToDo() {
    for (HashAlgorithm algorithm :
        List.of(HashAlgorithm.XXHASH, HashAlgorithm.XXHASH_CBOR, HashAlgorithm.SHA256_CBOR_64BIT)) {
      assertThat(algorithm.defaultSeed()).isEmpty();
      assertThatThrownBy(() -> BlockHasher.create(algorithm, null, 16))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("cannot be reproduced")
          .hasMessageContaining("PYTHONHASHSEED")
          .hasMessageContaining("token keys");
    }
  }

  @Test
  void create_emptySeed_isASeedLikeAnyOther() {
    assertThat(BlockHasher.create(HashAlgorithm.XXHASH, "", 16).seed()).isEmpty();
    assertThat(BlockHasher.create(HashAlgorithm.SHA256, "", 16).blockHashes(TOKENS))
        .isNotEqualTo(BlockHasher.create(HashAlgorithm.SHA256, null, 16).blockHashes(TOKENS));
  }

  @Test
  void legacy64bit_goldenTokens_matchReference() {
    BlockHasher legacy = BlockHasher.create(HashAlgorithm.SHA256_CBOR_64BIT, "42", 16);
    assertThat(Long.toUnsignedString(EngineBlockHasher.external(legacy.noneHash())))
        .isEqualTo("12056132650316601216");
    long[] hashes = legacy.blockHashes(TOKENS);
    assertThat(hashes)
        .containsExactly(
            unsigned(
                "4507334982611571403,8011887789416609082,16233348103920166316,6294226805466036931,5367403888305626529,2770459724316640077,12567074104065832560,2037571810377507382,14953930008223962764,8924083990439974514,2555907793242316971,8855234576731250472,7049740379712877133,1039426994095632541,15327399415592072405,13710446577529932621,11335863984095207281,16838390827590334160,9665772818305819949,18097860010015206652,7120202773153880537,5480206058118559335,1022058852656852294,2687932592597596068,10394556842949914372"));
    assertThat(legacy.blockHashes(TOKENS)).containsExactly(hashes);
    assertThat(legacy.chain(TOKENS, BlockHashInputs.none()).lastDigest()).hasSize(8);
  }

  @Test
  void xxh3_128_publishedSanityVectors_wordOrder() {
    // xxHash's sanity values for XXH3_128 with seed 0: "" and "a" (python-xxhash intdigest).
    long[] empty = LongTupleHashFunction.xx128().hashBytes(new byte[0]);
    assertThat(empty[1]).isEqualTo(0x99aa06d3014798d8L);
    assertThat(empty[0]).isEqualTo(0x6001c324468d497fL);
    long[] a = LongTupleHashFunction.xx128().hashBytes("a".getBytes(StandardCharsets.US_ASCII));
    assertThat(a[1]).isEqualTo(0xa96faf705af16834L);
    assertThat(a[0]).isEqualTo(0xe6c632b61e964e1fL);
  }

  @Test
  void xxhashCbor_goldenTokens_matchReference() {
    BlockHasher xxhash = BlockHasher.create(HashAlgorithm.XXHASH_CBOR, "42", 16);
    assertThat(hex(xxhash.noneHash())).isEqualTo("a9d2e63407fce1a26c9dc9d7fa2d7caf");
    assertThat(xxhash.blockHashes(TOKENS))
        .containsExactly(
            unsigned(
                "2231236638833442788,10429167022987276483,9686667150168303437,15325027973398943590,4986273812430068857,5228077914097549706,10583350805492618150,1885593892138173007,12499233208731550164,18344522047985505563,8650886927859387229,7997236407013664821,11020613240734969981,15051285498304943760,7045235716027313503,8521399669725783888,15999542550386910893,8284761000542200989,9535608938679661895,13586410935802035617,6431917805584139983,4978489799938789880,18333850976960053473,7504563391188529261,17484212216071607544"));
    assertThat(xxhash.chain(TOKENS, BlockHashInputs.none()).lastDigest()).hasSize(16);
  }

  @Test
  void blockHashes_concurrentThreads_sameResults() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<long[]>> results = new ArrayList<>();
      for (int i = 0; i < 64; i++) {
        results.add(pool.submit(() -> SHA256.blockHashes(TOKENS)));
      }
      for (Future<long[]> result : results) {
        assertThat(result.get()).containsExactly(GoldenVectors.baseHashes());
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
