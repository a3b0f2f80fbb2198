package io.kvindex.index;

import java.util.Locale;

/** The cache tier a block is held in. Immutable and thread-safe. */
public enum Tier {
  /** The engine's prefix cache (vLLM medium nil or {@code GPU}). */
  GPU(1),
  /** A CPU offload tier ({@code CPU}, any case). */
  CPU(2),
  /** A secondary tier: {@code STORAGE}, {@code FS}, {@code OBJ} or {@code DISK}. */
  STORAGE(4),
  /** Any other medium a connector reports. */
  OTHER(8);

  private final int bit;

  Tier(int bit) {
    this.bit = bit;
  }

  /** The tier's bit in a holder entry (1, 2, 4 or 8). */
  public int bit() {
    return bit;
  }

  /** The tier of a vLLM {@code medium} string: nil means GPU, case is ignored. */
  public static Tier of(String medium) {
    if (medium == null) {
      return GPU;
    }
    return switch (medium.toUpperCase(Locale.ROOT)) {
      case "GPU" -> GPU;
      case "CPU" -> CPU;
      case "STORAGE", "FS", "OBJ", "DISK" -> STORAGE;
      default -> OTHER;
    };
  }
}
