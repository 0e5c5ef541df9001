import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What a program started by this JVM costs: `readlink` of a path that does not exist, as
 * Hadoop's local file system runs it for each rename, N times one after the other, with a
 * 200 MiB heap in use (a driver's is not empty). Prints the CPU seconds of this process and of
 * its reaped children over the N, from /proc/self/stat. Run by tests/benchmarks/spawn_cost.py.
 */
public class SpawnCost {
  static long[] cpuTicks() throws Exception {
    String stat = Files.readString(Path.of("/proc/self/stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    // after the name: state is field 3, so utime (14), stime, cutime, cstime are 11 to 14 here
    return new long[] {
      Long.parseLong(f[11]) + Long.parseLong(f[12]), Long.parseLong(f[13]) + Long.parseLong(f[14])
    };
  }

  public static void main(String[] args) throws Exception {
    int spawns = Integer.parseInt(args[0]);
    byte[][] heap = new byte[200][];
    for (int i = 0; i < heap.length; i++) heap[i] = new byte[1 << 20];
    for (int i = 0; i < 50; i++) new ProcessBuilder("readlink", "file:/nonexistent").start().waitFor();
    long[] before = cpuTicks();
    for (int i = 0; i < spawns; i++) {
      new ProcessBuilder("readlink", "file:/nonexistent/" + i).start().waitFor();
    }
    long[] after = cpuTicks();
    System.out.printf("SPAWN-COST {\"self\": %.2f, \"children\": %.2f, \"heap\": %d}%n",
        (after[0] - before[0]) / 100.0, (after[1] - before[1]) / 100.0, heap.length);
  }
}
